"""A cluster's view put together from independent endpoint answers: statuses matched by member id,
failures by URL, members nobody asked listed for a second round, and no member list at all."""

from __future__ import annotations

from ufcctl.domain.etcd.defrag import Alarm, LastDefrag, Member, MemberStatus
from ufcctl.domain.etcd.snapshot import EndpointProbe, assemble

MEMBERS = (
    Member("1", "m1", ("https://10.0.0.1:2379",)),
    Member("2", "m2", ("https://10.0.0.2:2379",)),
    Member("3", "m3", ("https://10.0.0.3:2379",)),
)


def _status(member_id: str) -> MemberStatus:
    return MemberStatus(member_id, "1", 4096, 1024, 9, 2, 9)


def test_statuses_are_matched_by_member_id_whatever_url_the_inventory_used() -> None:
    probes = [
        EndpointProbe("core", "https://cp1:2379", _status("1"), MEMBERS, (Alarm("2", "NOSPACE"),),
                      {"m1": LastDefrag(1.0, 2, 1, "agent")}),
        EndpointProbe("core", "https://cp2:2379", _status("2")),
        EndpointProbe("core", "https://10.0.0.3:2379/", error="no answer within 5 s"),
    ]
    result = assemble("core", probes)
    assert result.view is not None
    assert set(result.view.statuses) == {"m1", "m2"}
    assert result.view.unreachable == {"m3": "no answer within 5 s"}
    assert result.view.alarm_names == ("NOSPACE",) and set(result.view.last) == {"m1"}
    assert result.unprobed == () and result.alarms_read
    assert result.errors == {"https://10.0.0.3:2379/": "no answer within 5 s"}


def test_members_nobody_asked_are_listed_for_a_second_round() -> None:
    probes = [EndpointProbe("core", "https://10.0.0.1:2379", _status("1"), MEMBERS, ())]
    result = assemble("core", probes)
    assert result.unprobed == ("https://10.0.0.2:2379", "https://10.0.0.3:2379")
    assert result.view is not None and result.view.unreachable == {}


def test_the_first_member_list_in_configured_order_wins() -> None:
    shorter = MEMBERS[:1]
    probes = [
        EndpointProbe("core", "https://10.0.0.1:2379", _status("1"), shorter, ()),
        EndpointProbe("core", "https://10.0.0.2:2379", _status("2"), MEMBERS, ()),
    ]
    result = assemble("core", probes)
    assert result.view is not None and result.view.members == shorter


def test_no_member_list_gives_no_view_and_every_error() -> None:
    probes = [
        EndpointProbe("core", "https://10.0.0.1:2379", error="no answer within 5 s"),
        EndpointProbe("core", "https://10.0.0.2:2379", _status("2"), error="no answer within 5 s"),
    ]
    result = assemble("core", probes)
    assert result.view is None
    assert result.errors == {p.endpoint: "no answer within 5 s" for p in probes}


def test_an_unread_alarm_list_is_said() -> None:
    probes = [EndpointProbe("core", "https://10.0.0.1:2379", _status("1"), MEMBERS[:1], None)]
    assert not assemble("core", probes).alarms_read


def test_a_member_without_a_client_url_is_unreachable_with_the_reason() -> None:
    members = (Member("1", "m1", ("https://10.0.0.1:2379",)), Member("4", "m4", ()))
    probes = [EndpointProbe("core", "https://10.0.0.1:2379", _status("1"), members, ())]
    result = assemble("core", probes)
    assert result.view is not None and result.view.unreachable == {"m4": "no client URL in the member list"}
