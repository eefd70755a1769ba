"""The node's join command: member add retried while etcd's strict reconfiguration check refuses."""

from __future__ import annotations

from typing import Any

import pytest

from ufcctl.domain.etcd.defrag import ClusterView, Member, MemberStatus
from ufcctl.engine.etcd_client import EtcdError
from ufcctl.nodeside import etcd_join


class FakeClient:
    def __init__(self, failures: list[str]):
        self.failures = failures
        self.calls = 0

    def first(self, call: str, *args: Any) -> Any:
        assert call == "member_add"
        self.calls += 1
        if self.failures:
            raise EtcdError("cp1", self.failures.pop(0), 14)
        return [
            {"ID": "1", "name": "cp1", "peerURLs": ["https://a:2380"]},
            {"ID": "2", "peerURLs": list(args)},
        ]


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(etcd_join.time, "sleep", lambda seconds: None)


def test_add_retries_while_the_cluster_is_briefly_unhealthy() -> None:
    client = FakeClient(["etcdserver: unhealthy cluster", "etcdserver: unhealthy cluster"])
    members = etcd_join._add(client, "https://b:2380")  # type: ignore[arg-type]
    assert client.calls == 3 and members[1]["peerURLs"] == ["https://b:2380"]


def test_add_gives_up_on_other_errors_at_once() -> None:
    client = FakeClient(["etcdserver: peerURL exists"])
    with pytest.raises(EtcdError, match="peerURL exists"):
        etcd_join._add(client, "https://b:2380")  # type: ignore[arg-type]
    assert client.calls == 1


def test_add_gives_up_after_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(etcd_join, "ADD_RETRY_SECONDS", -1.0)
    client = FakeClient(["etcdserver: unhealthy cluster"] * 5)
    with pytest.raises(EtcdError, match="unhealthy cluster"):
        etcd_join._add(client, "https://b:2380")  # type: ignore[arg-type]
    assert client.calls == 1


# ---- --wait-settled (roles/etcd tasks/renew.yml, after each member's restart) ------------------------

def _view(leader_index: int, mine: int, *, down: bool = False, errors: tuple[str, ...] = ()) -> ClusterView:
    members = tuple(Member(str(i), f"cp{i}", (f"https://10.0.0.{i}:2379",)) for i in (1, 2, 3))
    statuses = {"cp1": MemberStatus("1", "1", 0, 0, 9, 2, leader_index, errors=errors),
                "cp2": MemberStatus("2", "1", 0, 0, 9, 2, mine)}
    if not down:
        statuses["cp3"] = MemberStatus("3", "1", 0, 0, 9, 2, leader_index)
    return ClusterView("core", members, statuses, {"cp3": "refused"} if down else {})


class Views:
    def __init__(self, views: list[ClusterView | None]):
        self.views = views

    def view(self, with_last: bool = True) -> ClusterView:
        view = self.views.pop(0) if len(self.views) > 1 else self.views[0]
        if view is None:
            raise EtcdError("core", "connection refused")
        return view


def test_wait_settled_waits_for_every_member_then_for_the_leaders_first_index() -> None:
    # cp2 restarting (no answer), cp3 down, the leader reporting an error, then settled with cp2 behind
    # the leader's index as first seen (100): done once cp2 reaches 100, not the later 140
    views = [None, _view(90, 0, down=True), _view(95, 0, errors=("NOSPACE",)), _view(100, 60), _view(120, 99),
             _view(140, 100)]
    client = Views(views)
    assert etcd_join.wait_settled(client, "cp2", timeout=5) is not None  # type: ignore[arg-type]
    assert client.views == [_view(140, 100)]


def test_wait_settled_gives_up_after_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    assert etcd_join.wait_settled(Views([_view(9, 9, down=True)]), "cp2", timeout=-1) is None  # type: ignore[arg-type]


# ---- --join --start (roles/etcd tasks/members.yml): start the joined member, nudging its cluster ----------

class FakeUnit:
    """systemctl of one unit: `show` answers the next state of `states` (the last one repeats)."""

    def __init__(self, states: list[str]):
        self.states = states
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, *args: str) -> str:
        self.calls.append(args)
        if args[0] == "show":
            return self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return ""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class NudgedCluster:
    def __init__(self, failures: int = 0):
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.failures = failures

    def first(self, call: str, *args: Any) -> Any:
        self.calls.append((call, args))
        if self.failures:
            self.failures -= 1
            raise EtcdError("cp1", "connection refused")
        return "7587" if call == "lease_grant" else None


def test_start_joined_commits_a_lease_grant_and_revoke_every_two_seconds_until_the_unit_is_active() -> None:
    unit, clock, cluster = FakeUnit(["inactive"] + ["activating"] * 11 + ["active"]), Clock(), NudgedCluster()
    problem = etcd_join.start_joined(cluster, "etcd-events.service", systemctl=unit,  # type: ignore[arg-type]
                                     sleep=clock.sleep, clock=clock)
    assert problem is None
    assert unit.calls[:3] == [("daemon-reload",), ("enable", "etcd-events.service"),
                              ("start", "--no-block", "etcd-events.service")]  # --no-block: we wait, nudging
    grants = [args for call, args in cluster.calls if call == "lease_grant"]
    assert grants and all(args == (etcd_join.NUDGE_LEASE_TTL,) for args in grants)
    assert ("lease_revoke", ("7587",)) in cluster.calls  # each lease it granted, it revokes
    assert len(grants) == 3  # 12 polls of 0.5 s: at 0, 2 and 4 s, not on every poll


def test_start_joined_keeps_going_when_a_nudge_fails_and_reports_a_failed_unit() -> None:
    unit, clock, cluster = FakeUnit(["activating"] * 9 + ["failed"]), Clock(), NudgedCluster(failures=1)
    problem = etcd_join.start_joined(cluster, "etcd-core.service", systemctl=unit,  # type: ignore[arg-type]
                                     sleep=clock.sleep, clock=clock)
    assert problem == "etcd-core.service failed to start"
    assert [call for call, _ in cluster.calls].count("lease_grant") == 3  # the failed one, then at 2 and 4 s


def test_start_joined_gives_up_after_its_timeout() -> None:
    unit, clock = FakeUnit(["activating"]), Clock()
    problem = etcd_join.start_joined(NudgedCluster(), "etcd-pods.service", timeout=10,  # type: ignore[arg-type]
                                     systemctl=unit, sleep=clock.sleep, clock=clock)
    assert problem == "etcd-pods.service not active within 10 s (state activating)"
