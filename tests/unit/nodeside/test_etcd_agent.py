"""The defrag procedure against an in-memory cluster: lock, leader last, one at a time, skips, NOSPACE."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pyimports import import_closure
from ufcctl.domain.etcd.defrag import Alarm, ClusterView, DefragSettings, LastDefrag, Member, MemberStatus
from ufcctl.domain.etcd.defrag_metrics import (
    LAST_DURATION,
    LAST_RESULT,
    LAST_RUN,
    LAST_SUCCESS,
    parse_samples,
)
from ufcctl.domain.etcd.rule import parse_rule
from ufcctl.engine.etcd_client import EtcdError
from ufcctl.nodeside.etcd_agent import main, run_agent
from ufcctl.nodeside.etcd_defrag import DefragRun
from ufcctl.nodeside.etcd_defrag_config import AgentConfig, load_config

MiB = 1024 * 1024
NAMES = ("m1", "m2", "m3")


class FakeEtcd:
    """Just enough of a three-member cluster: sizes, leader, alarms, keys with leases, and an event log."""

    def __init__(self, leader: str = "m2", size: int = 400 * MiB, in_use: int = 100 * MiB):
        self.ids = {n: str(i) for i, n in enumerate(NAMES, 1)}
        self.leader = leader
        self.sizes = {n: [size, in_use] for n in NAMES}
        self.revision = 5000
        self.down: set[str] = set()
        self.alarms: list[Alarm] = []
        self.kv: dict[str, tuple[str, str | None]] = {}  # key -> (value, lease)
        self.leases: set[str] = set()
        self.events: list[tuple[str, ...]] = []
        self.fail_defrag: set[str] = set()
        self.compacted_to = 0  # the cluster's compaction revision
        self.in_use_after_compaction = 50 * MiB
        # like etcd's dbSizeInUse: pages a compaction freed show in the status only after a later
        # write was committed (measured on the lab); member -> in-use size not yet shown
        self.unseen: dict[str, int] = {}
        self.after_defrag: dict[str, Any] = {}  # name -> callable run after that member's defrag

    # ClusterClient surface
    def view(self, with_last: bool = True) -> ClusterView:
        members = tuple(Member(self.ids[n], n, (f"https://{n}:2379",)) for n in NAMES)
        statuses = {n: self._status(n) for n in NAMES if n not in self.down}
        last = {}
        if with_last:
            for key, (value, _) in self.kv.items():
                if key.startswith("/ufcctl/etcd-defrag/core/last/"):
                    last[key.rsplit("/", 1)[1]] = LastDefrag.from_json(value)
        return ClusterView(
            "core", members, statuses, {n: "connection refused" for n in self.down}, tuple(self.alarms), last
        )

    def first(self, call: str, *args: Any, avoid: str | None = None) -> Any:
        return getattr(self, call)(*args)

    def gateway(self, endpoint: str) -> FakeGateway:
        return FakeGateway(self, endpoint.split("//")[1].split(":")[0])

    # cluster-wide calls
    def _status(self, name: str) -> MemberStatus:
        size, in_use = self.sizes[name]
        return MemberStatus(self.ids[name], self.ids[self.leader], size, in_use, self.revision, 3, 100)

    def _nospace(self) -> None:
        if any(a.alarm == "NOSPACE" for a in self.alarms):
            raise EtcdError("fake", "etcdserver: mvcc: database space exceeded", 8)

    def lease_grant(self, ttl: int) -> str:
        self._nospace()
        lease = f"L{len(self.leases) + 1}"
        self.leases.add(lease)
        return lease

    def lease_keepalive(self, lease: str) -> int:
        return 60

    def lease_revoke(self, lease: str) -> None:
        self.leases.discard(lease)
        self.kv = {k: v for k, v in self.kv.items() if v[1] != lease}
        self.events.append(("unlock", lease))

    def _write(self) -> int:
        self._nospace()
        self.revision += 1
        for name, in_use in self.unseen.items():
            self.sizes[name][1] = in_use
        self.unseen.clear()
        return self.revision

    def create(self, key: str, value: str, lease: str) -> tuple[bool, str | None]:
        if key in self.kv:
            return False, self.kv[key][0]
        self._write()
        self.kv[key] = (value, lease)
        self.events.append(("lock", lease))
        return True, None

    def put(self, key: str, value: str) -> int:
        self.kv[key] = (value, None)
        return self._write()

    def compact(self, revision: int) -> None:
        # served by m1: like etcd, m1 has freed its pages when the physical call returns
        self.events.append(("compact", str(revision)))
        self.gateway("https://m1:2379").compact(revision)

    def disarm(self, alarm: Alarm) -> None:
        self.alarms.remove(alarm)
        self.events.append(("disarm", alarm.member_id))

    def lock_holder(self) -> str | None:
        entry = self.kv.get("/ufcctl/etcd-defrag/core/lock")
        return entry[1] if entry else None


class FakeGateway:
    def __init__(self, etcd: FakeEtcd, name: str):
        self.etcd, self.name = etcd, name

    def defragment(self, timeout: float) -> None:
        if self.name in self.etcd.down or self.name in self.etcd.fail_defrag:
            raise EtcdError(self.name, "context deadline exceeded")
        self.etcd.events.append(("defrag", self.name, str(self.etcd.lock_holder())))
        in_use = self.etcd.unseen.pop(self.name, self.etcd.sizes[self.name][1])  # a rewrite: exact
        self.etcd.sizes[self.name] = [in_use, in_use]
        if self.name in self.etcd.after_defrag:
            self.etcd.after_defrag.pop(self.name)()

    def status(self) -> MemberStatus:
        return self.etcd._status(self.name)

    def compact(self, revision: int) -> None:
        """A physical compaction served by this member. The worst case of a lagging member: it frees
        its pages only when a compaction it serves returns; asked for a revision already compacted
        it says so at once and frees nothing."""
        self.etcd.events.append(("compact-via", self.name, str(revision)))
        if revision <= self.etcd.compacted_to:
            raise EtcdError(self.name, "etcdserver: mvcc: required revision has been compacted", 11)
        if revision > self.etcd.revision:
            raise EtcdError(self.name, "etcdserver: mvcc: required revision is a future revision", 11)
        self.etcd.compacted_to = revision
        in_use = self.etcd.unseen.get(self.name, self.etcd.sizes[self.name][1])
        self.etcd.unseen[self.name] = min(in_use, self.etcd.in_use_after_compaction)

    def put(self, key: str, value: str) -> int:
        self.etcd.events.append(("put-via", self.name, key))
        return self.etcd.put(key, value)

    def move_leader(self, target_id: str) -> None:
        assert self.etcd.ids[self.name] == self.etcd.ids[self.etcd.leader], (
            "only the leader can move leadership"
        )
        self.etcd.leader = next(n for n, i in self.etcd.ids.items() if i == target_id)
        self.etcd.events.append(("move-leader", self.name, self.etcd.leader))


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0
        self.hooks: list[Any] = []
        self._in_hook = False

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        # an agent started by a hook sleeps too: no nested hooks; and hooks run in the leader's
        # poll sleeps (seconds), not in the sub-second waits after a settle write
        if self._in_hook or seconds < 1:
            return
        self._in_hook = True
        try:
            for hook in list(self.hooks):
                hook()
        finally:
            self._in_hook = False


SETTINGS = DefragSettings(
    rule=parse_rule("dbSizeFree > 100*1024*1024"), quota_bytes=1024 * MiB, compaction_keep_revisions=1000
)


def run(
    etcd: FakeEtcd, member: str | None = None, clock: Clock | None = None, **cfg: Any
) -> tuple[Any, list[str]]:
    lines: list[str] = []
    settings = cfg.pop("settings", SETTINGS)
    config = AgentConfig(
        cluster="core",
        endpoints=("https://m1:2379",),
        tls=None,
        settings=settings,
        member=member,
        by=f"test@{member or 'controller'}",
        lock_ttl_seconds=30,
        **cfg,
    )
    clock = clock or Clock()
    report = DefragRun(config, etcd, lines.append, clock=clock, sleep=clock.sleep).run()  # type: ignore[arg-type]
    return report, lines


def actions(report: Any) -> list[tuple[str, str]]:
    return [(o.member, o.action) for o in report.outcomes]


def defrags(etcd: FakeEtcd) -> list[str]:
    return [e[1] for e in etcd.events if e[0] == "defrag"]


def test_controller_run_one_at_a_time_leader_last_under_the_lock() -> None:
    etcd = FakeEtcd(leader="m2")
    report, lines = run(etcd)
    assert actions(report) == [("m1", "defragmented"), ("m3", "defragmented"), ("m2", "defragmented")]
    assert [o.leader for o in report.outcomes] == [False, False, True]
    # compaction first (keeping 1000 revisions), every defrag while our lease holds the lock, lock
    # released
    assert etcd.events[0] == ("compact", "4000")
    assert etcd.events[2][0] == "lock"
    lease = etcd.events[2][1]
    assert [e for e in etcd.events if e[0] == "defrag"] == [("defrag", n, lease) for n in ("m1", "m3", "m2")]
    assert etcd.events[-1] == ("unlock", lease) and etcd.lock_holder() is None
    # sizes before/after are reported and the last-defrag records are written
    first = report.outcomes[0]
    assert (first.before.db_size, first.after.db_size) == (400 * MiB, 50 * MiB)
    assert set(etcd.view().last) == set(NAMES)
    assert any("member=m2 leader=true action=defragmented before_db_size=" in line for line in lines)


def test_rule_sees_the_space_a_lagging_member_frees_after_compaction() -> None:
    """160 MiB files with 100 MiB in use: only the compaction makes them due (rule: > 100 MiB free).
    Each member is settled before its rule is read: a marker write, a compaction to `revision - keep`
    served by the member itself, two more marker writes served by it so its status shows the freed
    pages."""
    etcd = FakeEtcd(leader="m2", size=160 * MiB, in_use=100 * MiB)
    report, _ = run(etcd)
    assert actions(report) == [("m1", "defragmented"), ("m3", "defragmented"), ("m2", "defragmented")]
    order = [e[:3] if e[0] != "put-via" else e[:2] for e in etcd.events if e[0] not in ("lock", "unlock")]
    # lock (5001), then per member: marker, compaction to revision - keep, two markers, its record
    assert order == [
        ("compact", "4000"),
        ("compact-via", "m1", "4000"),
        *[("put-via", "m1"), ("compact-via", "m1", "4002"), ("put-via", "m1"), ("put-via", "m1")],
        ("defrag", "m1", "L1"),
        *[("put-via", "m3"), ("compact-via", "m3", "4006"), ("put-via", "m3"), ("put-via", "m3")],
        ("defrag", "m3", "L1"),
        *[("put-via", "m2"), ("compact-via", "m2", "4010"), ("put-via", "m2"), ("put-via", "m2")],
        ("defrag", "m2", "L1"),
    ]
    assert etcd.compacted_to <= etcd.revision - 1000


def test_without_a_write_after_the_compaction_the_freed_pages_stay_hidden() -> None:
    """The fake's model of etcd's dbSizeInUse (what the settle writes are for): a follower whose
    compaction finished but saw no later write still shows its old in-use size."""
    etcd = FakeEtcd(leader="m2", size=160 * MiB, in_use=100 * MiB)
    etcd.gateway("https://m3:2379").compact(4000)
    assert etcd.view().statuses["m3"].db_size_in_use == 100 * MiB
    etcd.put("/any", "x")
    assert etcd.view().statuses["m3"].db_size_in_use == 50 * MiB


def test_member_agents_one_after_another_never_compact_past_keep() -> None:
    """Three agents, one after another, each compacting first and settling its own member."""
    etcd = FakeEtcd(leader="m2", size=160 * MiB, in_use=100 * MiB)
    for member in ("m1", "m3", "m2"):
        report, _ = run(etcd, member=member)
        assert actions(report) == [(member, "defragmented")]
        assert etcd.compacted_to <= etcd.revision - 1000


def test_compacted_further_elsewhere_is_logged() -> None:
    """Someone compacted further than the settle compactions can go: the run says so per member
    and decides on what the status shows; no free space shown: skipped with the rule's reason."""
    etcd = FakeEtcd(leader="m2", size=160 * MiB, in_use=100 * MiB)
    etcd.compacted_to = 4500  # the apiserver's own compaction, newer than ours
    report, lines = run(etcd)
    assert actions(report) == [("m1", "skipped"), ("m3", "skipped"), ("m2", "skipped")]
    assert all("rule false" in o.reason for o in report.outcomes)
    assert sum("could not settle the compaction through this member" in line for line in lines) == 3


def test_follower_agent_defrags_only_its_own_member() -> None:
    etcd = FakeEtcd(leader="m2")
    report, _ = run(etcd, member="m3")
    assert actions(report) == [("m3", "defragmented")]
    assert defrags(etcd) == ["m3"]


def test_leader_agent_waits_for_due_followers() -> None:
    etcd = FakeEtcd(leader="m2")
    clock = Clock()
    # the followers' own agents run while the leader's agent waits
    clock.hooks.append(lambda: run(etcd, member="m1", clock=clock) if "m1" not in defrags(etcd) else None)
    clock.hooks.append(lambda: run(etcd, member="m3", clock=clock) if "m3" not in defrags(etcd) else None)
    report, lines = run(etcd, member="m2", clock=clock)
    assert defrags(etcd) == ["m1", "m3", "m2"]
    assert actions(report) == [("m2", "defragmented")]
    assert any("is leader; waiting for due followers m1, m3" in line for line in lines)


def test_leader_agent_sees_followers_due_only_after_settling_them() -> None:
    """60 MiB free everywhere until compacted (rule: > 100 MiB): the leader's agent settles the
    followers before deciding whether to wait, or it would see none due and go first."""
    etcd = FakeEtcd(leader="m2", size=160 * MiB, in_use=100 * MiB)
    clock = Clock()
    clock.hooks.append(lambda: run(etcd, member="m1", clock=clock) if "m1" not in defrags(etcd) else None)
    clock.hooks.append(lambda: run(etcd, member="m3", clock=clock) if "m3" not in defrags(etcd) else None)
    report, lines = run(etcd, member="m2", clock=clock)
    assert defrags(etcd) == ["m1", "m3", "m2"]
    assert any("is leader; waiting for due followers m1, m3" in line for line in lines)
    assert [e[1] for e in etcd.events if e[0] == "compact-via"][:3] == ["m1", "m1", "m3"]


def test_leader_goes_on_after_waiting_too_long() -> None:
    etcd = FakeEtcd(leader="m2")
    report, _ = run(etcd, member="m2", leader_wait_seconds=30)
    assert defrags(etcd) == ["m2"]
    assert report.notes == ["leader waited 30s; followers still due: m1, m3"]


def test_move_leader_instead_of_waiting() -> None:
    etcd = FakeEtcd(leader="m2")
    report, _ = run(etcd, member="m2", settings=replace(SETTINGS, move_leader=True))
    kinds = [e[0] for e in etcd.events if e[0] not in ("compact-via", "put-via")]
    assert kinds[:4] == ["compact", "lock", "move-leader", "defrag"]
    assert defrags(etcd) == ["m2"] and etcd.leader != "m2"


def test_nothing_happens_while_a_member_is_down() -> None:
    etcd = FakeEtcd()
    etcd.down.add("m3")
    report, _ = run(etcd)
    assert actions(report) == [("m1", "skipped"), ("m2", "skipped"), ("m3", "skipped")]
    assert all(
        o.reason == "cluster unhealthy: member m3 unreachable: connection refused" for o in report.outcomes
    )
    assert etcd.events == []  # no compaction, no lock, no defrag


def test_nothing_happens_under_a_corrupt_alarm() -> None:
    etcd = FakeEtcd()
    etcd.alarms.append(Alarm("1", "CORRUPT"))
    report, _ = run(etcd, member="m1")
    assert actions(report) == [("m1", "skipped")] and "CORRUPT" in report.outcomes[0].reason
    assert etcd.events == []


def test_member_killed_mid_run_stops_the_run_and_reports_skips() -> None:
    etcd = FakeEtcd(leader="m2")
    etcd.after_defrag["m1"] = lambda: etcd.down.add("m3")
    report, _ = run(etcd)
    assert actions(report) == [("m1", "defragmented"), ("m3", "skipped"), ("m2", "skipped")]
    assert report.outcomes[1].reason == "cluster unhealthy: member m3 unreachable: connection refused"
    assert etcd.lock_holder() is None and not report.failed


def test_failed_defrag_is_reported_and_the_run_goes_on() -> None:
    etcd = FakeEtcd(leader="m2")
    etcd.fail_defrag.add("m1")
    report, _ = run(etcd)
    assert actions(report) == [("m1", "failed"), ("m3", "defragmented"), ("m2", "defragmented")]
    assert report.failed and "context deadline exceeded" in report.outcomes[0].reason


def test_rule_false_members_are_skipped_with_the_reason() -> None:
    etcd = FakeEtcd(size=120 * MiB)  # 70 MiB free after compaction
    report, _ = run(etcd)
    assert actions(report) == [("m1", "skipped"), ("m3", "skipped"), ("m2", "skipped")]
    assert report.outcomes[0].reason == "rule false: dbSizeFree > 100*1024*1024"
    assert defrags(etcd) == []


def test_recently_defragmented_member_is_not_due_again() -> None:
    etcd = FakeEtcd()
    run(etcd, member="m1")
    etcd.sizes["m1"] = [400 * MiB, 100 * MiB]  # fragmented again, but within min_interval
    report, _ = run(etcd, member="m1")
    assert actions(report) == [("m1", "skipped")] and "defragmented 0s ago" in report.outcomes[0].reason


def test_lock_held_elsewhere_waits_then_skips() -> None:
    etcd = FakeEtcd()
    etcd.kv["/ufcctl/etcd-defrag/core/lock"] = ('{"by": "agent@cp9"}', "other")
    report, lines = run(etcd, member="m1", lock_wait_seconds=10)
    assert actions(report) == [("m1", "skipped")]
    assert "still held after 10s" in report.outcomes[0].reason
    assert any('lock held by {"by": "agent@cp9"}' in line for line in lines)
    assert defrags(etcd) == []


def test_dry_run_changes_nothing_and_shows_the_order() -> None:
    etcd = FakeEtcd(leader="m1")
    report, _ = run(etcd, dry_run=True)
    assert actions(report) == [
        ("m2", "would-defragment"),
        ("m3", "would-defragment"),
        ("m1", "would-defragment"),
    ]
    assert etcd.events == [] and etcd.kv == {}


@pytest.mark.parametrize("member", ["m1", "m3"])
def test_nospace_followers_leave_recovery_to_the_leader(member: str) -> None:
    etcd = FakeEtcd(leader="m2")
    etcd.alarms.append(Alarm("1", "NOSPACE"))
    report, _ = run(etcd, member=member)
    assert actions(report) == [(member, "skipped")]
    assert "the leader's agent (m2) recovers" in report.outcomes[0].reason
    assert defrags(etcd) == []


def test_nospace_leader_recovers_every_member_without_lock_then_disarms() -> None:
    etcd = FakeEtcd(leader="m2", size=1000 * MiB, in_use=900 * MiB)  # 98% of the 1 GiB quota
    etcd.alarms.append(Alarm("1", "NOSPACE"))
    report, _ = run(etcd, member="m2")
    assert defrags(etcd) == ["m1", "m3", "m2"]
    assert all(e[2] == "None" for e in etcd.events if e[0] == "defrag")  # no lock under NOSPACE
    assert report.disarmed == ["1"] and etcd.alarms == []
    assert set(etcd.view().last) == set(NAMES)  # records written once writes work again


def test_nospace_kept_while_space_is_not_recovered() -> None:
    etcd = FakeEtcd(leader="m2", size=1000 * MiB, in_use=1000 * MiB)
    etcd.alarms.append(Alarm("1", "NOSPACE"))
    etcd.in_use_after_compaction = 1000 * MiB  # nothing to free
    report, _ = run(etcd, settings=replace(SETTINGS, rule=parse_rule("true")))
    assert defrags(etcd) == ["m1", "m3", "m2"]
    assert report.disarmed == [] and etcd.alarms
    assert any("NOSPACE kept: still at or above 90% of quota" in n for n in report.notes)


def test_unknown_member_is_a_failure() -> None:
    report, _ = run(FakeEtcd(), member="m9")
    assert actions(report) == [("m9", "failed")] and report.failed


def _config(tmp_path: Path, **values: Any) -> Path:
    base = {
        "cluster": "core",
        "endpoints": ["https://10.0.0.1:2379"],
        "quota_bytes": 8 << 30,
        "ca": "/etc/ca.crt",
        "cert": "/etc/c.crt",
        "key": "/etc/c.key",
        "member": "cp1",
    }
    path = tmp_path / "core.json"
    path.write_text(json.dumps({**base, **values}))
    return path


def test_load_config_defaults_and_errors(tmp_path: Path) -> None:
    cfg = load_config(str(_config(tmp_path)))
    assert cfg.settings.rule.text == "dbSizeFree > 200*1024*1024 || dbQuotaUsage > 0.8"
    assert (cfg.member, cfg.settings.min_interval_seconds, cfg.lock_ttl_seconds) == ("cp1", 3600.0, 60)
    with pytest.raises(SystemExit, match="core.json: bad config: RuleError"):
        load_config(str(_config(tmp_path, rule="dbSize >")))
    with pytest.raises(SystemExit, match="partial.json: bad config: KeyError: 'quota_bytes'"):
        load_config(str(_write(tmp_path)))
    with pytest.raises(SystemExit, match="cannot read"):
        load_config(str(tmp_path / "missing.json"))


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "partial.json"
    path.write_text(json.dumps({"cluster": "core", "endpoints": []}))
    return path


@pytest.mark.parametrize(
    ("rule", "code", "text"),
    [
        pytest.param("dbQuotaUsage > 0.8", 0, "valid rule", id="valid"),
        pytest.param("dbQuotaUsage >", 2, "ends too early", id="invalid"),
    ],
)
def test_check_rule_command(rule: str, code: int, text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check-rule", rule]) == code
    out = capsys.readouterr()
    assert text in out.out + out.err


# ---- textfile metrics -----------------------------------------------------------------------------


def _agent(
    etcd: FakeEtcd, textfile_dir: Path | str, clock: Clock | None = None, **cfg: Any
) -> tuple[int, list[str]]:
    """One agent run of member m1 through run_agent (what main runs), clock and monotonic fake."""
    lines: list[str] = []
    config = AgentConfig(
        cluster="core",
        endpoints=("https://m1:2379",),
        tls=None,
        settings=cfg.pop("settings", SETTINGS),
        member="m1",
        lock_ttl_seconds=30,
        textfile_dir=str(textfile_dir),
        **cfg,
    )
    clock = clock or Clock()
    code = run_agent(config, etcd, lines.append, clock=clock, sleep=clock.sleep, monotonic=clock)  # type: ignore[arg-type]
    return code, lines


def _metrics(textfile_dir: Path) -> dict[str, tuple[str, float]]:
    path = textfile_dir / "ufcctl-etcd-defrag-core.prom"
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    return parse_samples(path.read_text())


def test_metrics_after_a_successful_run(tmp_path: Path) -> None:
    etcd, clock = FakeEtcd(leader="m2"), Clock()
    etcd.after_defrag["m1"] = lambda: clock.sleep(0.5)  # the defrag takes time
    code, _ = _agent(etcd, tmp_path, clock)
    assert code == 0 and defrags(etcd) == ["m1"]
    samples = _metrics(tmp_path)
    assert samples[LAST_RUN] == ('etcd_cluster="core",member="m1"', 1_000_000.0)
    assert samples[LAST_SUCCESS][1] == 1_000_000.0 and samples[LAST_RESULT][1] == 1.0
    assert samples[LAST_DURATION][1] >= 0.5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ufcctl-etcd-defrag-core.prom"]  # no temp left


def test_metrics_nothing_due_is_a_success(tmp_path: Path) -> None:
    """Overdue means the agent has not run successfully, not that no defrag was needed."""
    code, _ = _agent(FakeEtcd(size=120 * MiB), tmp_path)
    assert code == 0 and _metrics(tmp_path)[LAST_RESULT][1] == 1.0


def test_metrics_after_a_failed_run_keep_the_last_success(tmp_path: Path) -> None:
    etcd, clock = FakeEtcd(leader="m2"), Clock()
    _agent(etcd, tmp_path, clock)
    clock.now = started = 1_007_200.0
    etcd.sizes["m1"] = [400 * MiB, 100 * MiB]
    etcd.fail_defrag.add("m1")
    code, _ = _agent(etcd, tmp_path, clock)
    assert code == 1
    samples = _metrics(tmp_path)
    assert samples[LAST_RESULT][1] == 0.0 and samples[LAST_RUN][1] == started
    assert samples[LAST_SUCCESS][1] == 1_000_000.0


def test_metrics_after_an_aborted_run(tmp_path: Path) -> None:
    etcd = FakeEtcd()

    def unreachable(with_last: bool = True) -> ClusterView:
        raise EtcdError("https://m1:2379", "connection refused")

    etcd.view = unreachable  # type: ignore[method-assign]
    code, lines = _agent(etcd, tmp_path)
    assert code == 1 and any("action=aborted" in line for line in lines)
    samples = _metrics(tmp_path)
    assert samples[LAST_RESULT][1] == 0.0 and LAST_SUCCESS not in samples  # never succeeded


def test_dry_run_writes_no_metrics(tmp_path: Path) -> None:
    code, _ = _agent(FakeEtcd(), tmp_path, dry_run=True)
    assert code == 0 and list(tmp_path.iterdir()) == []


def test_no_textfile_dir_no_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, lines = _agent(FakeEtcd(), "")
    assert code == 0 and list(tmp_path.iterdir()) == []
    assert not any("metrics" in line for line in lines)


@pytest.mark.parametrize("fails", [True, False], ids=["failed-run", "ok-run"])
def test_unwritable_textfile_dir_is_logged_and_keeps_the_exit_code(tmp_path: Path, fails: bool) -> None:
    etcd = FakeEtcd()
    if fails:
        etcd.fail_defrag.add("m1")
    # a missing directory (a path under a regular file: unwritable even for root)
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, lines = _agent(etcd, blocker / "textfile")
    assert code == (1 if fails else 0)
    errors = [line for line in lines if "action=metrics-not-written" in line]
    assert len(errors) == 1 and "ufcctl-etcd-defrag-core.prom" in errors[0]


def test_load_config_textfile_dir(tmp_path: Path) -> None:
    assert load_config(str(_config(tmp_path))).textfile_dir == ""
    assert load_config(str(_config(tmp_path, textfile_dir=None))).textfile_dir == ""
    cfg = load_config(str(_config(tmp_path, textfile_dir="/var/lib/prometheus/node-exporter")))
    assert cfg.textfile_dir == "/var/lib/prometheus/node-exporter"


def test_the_controller_runs_the_procedure_not_the_agents_command_line() -> None:
    """`ufcctl etcd defrag` (app/etcd_maint.py) reaches the procedure without importing the agent's
    command line (argparse main, textfile metrics), directly or through the procedure's modules."""
    package = Path(__file__).resolve().parents[3] / "ufcctl"
    closure = import_closure(package, [package / "app" / "etcd_maint.py"])
    assert "ufcctl.nodeside.etcd_defrag" in closure
    assert not any(m == "ufcctl.nodeside.etcd_agent" for names in closure.values() for m in names)
    assert "ufcctl.nodeside.etcd_agent" not in closure
