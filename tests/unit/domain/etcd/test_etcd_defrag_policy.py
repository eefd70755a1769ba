"""Defrag policy: health gate, due decision, leader-last order, leadership target, compaction, disarm."""

from __future__ import annotations

import pytest

from ufcctl.domain.etcd.defrag import (
    Alarm,
    ClusterView,
    DefragSettings,
    LastDefrag,
    Member,
    MemberStatus,
    compaction_revision,
    decide,
    defrag_order,
    disarm_ready,
    followers_due,
    health_problems,
    move_leader_target,
)
from ufcctl.domain.etcd.rule import DEFAULT_RULE, parse_rule

MiB = 1024 * 1024
GiB = 1024 * MiB
IDS = {"m1": "11", "m2": "22", "m3": "33"}
NOW = 1_000_000.0


def member(name: str, learner: bool = False) -> Member:
    return Member(IDS.get(name, "99"), name, (f"https://{name}:2379",), learner)


def status(
    name: str,
    leader: str = "m2",
    size: int = 500 * MiB,
    in_use: int = 100 * MiB,
    index: int = 100,
    errors: tuple[str, ...] = (),
) -> MemberStatus:
    return MemberStatus(IDS[name], IDS[leader], size, in_use, 1000, 5, index, "3.4.23", errors)


def view(
    statuses: dict[str, MemberStatus] | None = None,
    unreachable: dict[str, str] | None = None,
    alarms: tuple[Alarm, ...] = (),
    last: dict[str, LastDefrag] | None = None,
    members: tuple[Member, ...] | None = None,
) -> ClusterView:
    if statuses is None:
        statuses = {n: status(n) for n in IDS if n not in (unreachable or {})}
    return ClusterView(
        "core", members or tuple(member(n) for n in IDS), statuses, unreachable or {}, alarms, last or {}
    )


SETTINGS = DefragSettings(rule=parse_rule(DEFAULT_RULE), quota_bytes=8 * GiB)


@pytest.mark.parametrize(
    ("cluster", "problems"),
    [
        pytest.param(view(), [], id="healthy"),
        pytest.param(view(alarms=(Alarm("11", "NOSPACE"),)), [], id="nospace-alone-is-not-unhealthy"),
        pytest.param(
            view(unreachable={"m3": "connection refused"}),
            ["member m3 unreachable: connection refused"],
            id="member-down",
        ),
        pytest.param(
            view(alarms=(Alarm("11", "CORRUPT"), Alarm("22", "NOSPACE"))),
            ["alarm(s) active: CORRUPT"],
            id="corrupt-alarm",
        ),
        pytest.param(
            view({"m1": status("m1", "m1"), "m2": status("m2"), "m3": status("m3")}),
            ["members do not agree on a leader"],
            id="split-leadership",
        ),
        pytest.param(
            view(members=(member("m1"), member("m2"), member("m3", learner=True))),
            ["member m3 is a learner"],
            id="learner",
        ),
        pytest.param(
            view(members=(member("m1"), member("m2"), member("m3"), Member("44", "", ("",)))),
            ["member 44 was added but never started"],
            id="unstarted-member",
        ),
        pytest.param(
            view(
                {
                    "m1": status("m1", errors=("memberID:11 alarm:NOSPACE ",)),
                    "m2": status("m2"),
                    "m3": status("m3"),
                },
                alarms=(Alarm("11", "NOSPACE"),),
            ),
            [],
            id="status-errors-listing-alarms-are-not-extra-problems",
        ),
        pytest.param(
            view(
                {"m1": status("m1", errors=("raft: disk stalled",)), "m2": status("m2"), "m3": status("m3")}
            ),
            ["member m1 reports: raft: disk stalled"],
            id="status-error",
        ),
        pytest.param(ClusterView("core", ()), ["no member list"], id="no-members"),
    ],
)
def test_health_problems(cluster: ClusterView, problems: list[str]) -> None:
    assert health_problems(cluster) == problems


@pytest.mark.parametrize(
    ("cluster", "name", "due", "reason"),
    [
        pytest.param(view(), "m1", True, "rule true", id="400MiB-free"),
        pytest.param(view({"m1": status("m1", size=150 * MiB)}), "m1", False, "rule false", id="50MiB-free"),
        pytest.param(
            view(last={"m1": LastDefrag(NOW - 60, 1, 1, "x")}),
            "m1",
            False,
            "defragmented 60s ago (min interval 3600s)",
            id="min-interval",
        ),
        pytest.param(
            view(last={"m1": LastDefrag(NOW - 4000, 1, 1, "x")}),
            "m1",
            True,
            "rule true",
            id="min-interval-passed",
        ),
        pytest.param(
            view(last={"m1": LastDefrag(NOW - 60, 1, 1, "x")}, alarms=(Alarm("11", "NOSPACE"),)),
            "m1",
            True,
            "NOSPACE alarm: every member is defragmented",
            id="nospace-ignores-min-interval",
        ),
        pytest.param(
            view({"m1": status("m1", size=150 * MiB)}, alarms=(Alarm("11", "NOSPACE"),)),
            "m1",
            True,
            "NOSPACE alarm: every member is defragmented",
            id="nospace-ignores-the-rule",
        ),
        pytest.param(view(unreachable={"m1": "timeout"}), "m1", False, "no status (timeout)", id="no-status"),
    ],
)
def test_decide(cluster: ClusterView, name: str, due: bool, reason: str) -> None:
    decision = decide(cluster, name, SETTINGS, NOW)
    assert decision.due is due
    assert decision.reason.startswith(reason)


def test_decide_reports_rule_evaluation_errors() -> None:
    settings = DefragSettings(rule=parse_rule("dbSize / dbSizeInUse > 2"), quota_bytes=GiB)
    decision = decide(view({"m1": status("m1", in_use=0)}), "m1", settings, NOW)
    assert not decision.due and "division by zero" in decision.reason


@pytest.mark.parametrize(
    ("leader", "names", "expected"),
    [
        pytest.param("m2", ["m1", "m2", "m3"], ["m1", "m3", "m2"], id="leader-in-middle"),
        pytest.param("m1", ["m3", "m2", "m1"], ["m2", "m3", "m1"], id="member-list-order-then-leader"),
        pytest.param("m3", ["m1", "m2"], ["m1", "m2"], id="leader-not-targeted"),
        pytest.param("m2", ["m2"], ["m2"], id="only-leader"),
    ],
)
def test_defrag_order_leader_last(leader: str, names: list[str], expected: list[str]) -> None:
    cluster = view({n: status(n, leader) for n in IDS})
    assert defrag_order(cluster, names) == expected


def test_followers_due_excludes_leader_and_recent() -> None:
    cluster = view({n: status(n, "m2") for n in IDS}, last={"m3": LastDefrag(NOW - 10, 1, 1, "x")})
    assert followers_due(cluster, SETTINGS, NOW) == ["m1"]


def test_move_leader_target_is_most_up_to_date_follower() -> None:
    cluster = view(
        {"m1": status("m1", index=90), "m2": status("m2", index=100), "m3": status("m3", index=95)}
    )
    target = move_leader_target(cluster, "m2")
    assert target is not None and target.name == "m3"
    alone = view({"m2": status("m2")}, unreachable={"m1": "x", "m3": "y"})
    assert move_leader_target(alone, "m2") is None


@pytest.mark.parametrize(
    ("revision", "keep", "expected"),
    [
        pytest.param(5000, 1000, 4000, id="keep-1000"),
        pytest.param(5000, 0, 5000, id="compact-to-head"),
        pytest.param(800, 1000, None, id="nothing-old-enough"),
        pytest.param(1001, 1000, None, id="revision-1-cannot-be-compacted"),
        pytest.param(5000, -3, 5000, id="negative-keep-is-zero"),
    ],
)
def test_compaction_revision(revision: int, keep: int, expected: int | None) -> None:
    assert compaction_revision(revision, keep) == expected


@pytest.mark.parametrize(
    ("sizes", "alarms", "ready", "why"),
    [
        pytest.param(
            [1 * GiB] * 3, (Alarm("11", "NOSPACE"),), True, "every member below 90%", id="recovered"
        ),
        pytest.param(
            [1 * GiB, 1 * GiB, 7.5 * GiB], (Alarm("11", "NOSPACE"),), False, "m3", id="one-still-big"
        ),
        pytest.param([1 * GiB] * 3, (), False, "no NOSPACE alarm", id="no-alarm"),
    ],
)
def test_disarm_ready(sizes: list[float], alarms: tuple[Alarm, ...], ready: bool, why: str) -> None:
    cluster = view({n: status(n, size=int(s)) for n, s in zip(IDS, sizes, strict=True)}, alarms=alarms)
    ok, reason = disarm_ready(cluster, SETTINGS)
    assert ok is ready and why in reason


def test_disarm_waits_for_members_without_status() -> None:
    cluster = view(
        unreachable={"m3": "down"},
        alarms=(Alarm("11", "NOSPACE"),),
        statuses={"m1": status("m1", size=GiB), "m2": status("m2", size=GiB)},
    )
    ok, reason = disarm_ready(cluster, SETTINGS)
    assert not ok and "m3 (no status)" in reason


def test_last_defrag_record_round_trip_and_garbage() -> None:
    record = LastDefrag(123.5, 10, 5, "agent@cp1")
    assert LastDefrag.from_json(record.to_json()) == record
    assert LastDefrag.from_json("not json") is None
    assert LastDefrag.from_json('{"at": 1}') is None


def test_fragmentation_percent() -> None:
    assert status("m1", size=400, in_use=100).fragmentation_percent == 75.0
    assert MemberStatus("1", "1", 0, 0, 0, 0, 0).fragmentation_percent == 0.0
    assert status("m2", leader="m2").is_leader and not status("m1").is_leader
