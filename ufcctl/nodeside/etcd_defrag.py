"""The defrag procedure: lock, compaction (etcd_compaction.py: once per run, then settled on each member
before it is judged), defrag one member at a time, record, disarm.

One procedure, two callers: the agent that a systemd timer runs on every etcd member
(ufcctl.nodeside.etcd_agent, which acts on its own member only) and `ufcctl etcd defrag` on the
controller (ufcctl/app/etcd_maint.py: every member of a cluster, leader last). Decisions come
from ufcctl.domain.etcd.defrag; etcd is reached through ufcctl.engine.etcd_client.

Runs on the nodes: imports follow the rule in ufcctl/nodeside/__init__.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ufcctl.domain.etcd.defrag import (
    ClusterView,
    LastDefrag,
    MemberStatus,
    decide,
    defrag_order,
    disarm_ready,
    followers_due,
    health_problems,
    last_key,
    move_leader_target,
)
from ufcctl.domain.etcd.defrag_result import MemberOutcome, RunReport, Sizes
from ufcctl.engine.etcd_client import ClusterClient, EtcdError
from ufcctl.nodeside.etcd_compaction import Compaction
from ufcctl.nodeside.etcd_defrag_config import AgentConfig
from ufcctl.nodeside.etcd_defrag_lock import DefragLock

Log = Callable[[str], None]


def _sizes_text(prefix: str, status: MemberStatus | None) -> str:
    if status is None:
        return f"{prefix}=unknown"
    return f"{prefix}_db_size={status.db_size} {prefix}_in_use={status.db_size_in_use}"


class DefragRun:
    """One run of the procedure against one cluster."""

    def __init__(
        self,
        cfg: AgentConfig,
        client: ClusterClient,
        log: Log,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.cfg, self.client, self.log, self.clock, self.sleep = cfg, client, log, clock, sleep
        self.report = RunReport(cfg.cluster)
        self.compaction = Compaction(cfg, client, log, sleep, self.report)
        self._records: list[tuple[str, LastDefrag]] = []

    def skip_all(self, names: list[str], reason: str, view: ClusterView | None = None) -> RunReport:
        for name in names:
            self.outcome(name, "skipped", reason, view)
        return self.report

    def outcome(
        self,
        name: str,
        action: str,
        reason: str,
        view: ClusterView | None = None,
        before: MemberStatus | None = None,
        after: MemberStatus | None = None,
        seconds: float = 0.0,
    ) -> None:
        leader = bool(view and view.leader == name)
        self.report.outcomes.append(
            MemberOutcome(
                name,
                action,
                reason,
                leader,
                Sizes.of(before),
                Sizes.of(after),
                round(seconds, 3),
                round(self.clock(), 3),
            )
        )
        extra = f" {_sizes_text('before', before)}" if before else ""
        if after:
            extra += (
                f" {_sizes_text('after', after)} reclaimed={before.db_size - after.db_size if before else 0}"
            )
        self.log(
            f"cluster={self.cfg.cluster} member={name} leader={str(leader).lower()} action={action}"
            f"{extra} seconds={seconds:.2f} reason={reason}"
        )

    def run(self) -> RunReport:
        view = self.client.view()
        names = [m.name for m in view.members if m.name]
        if self.cfg.member is not None and self.cfg.member not in names:
            self.outcome(self.cfg.member, "failed", f"not in the member list of {self.cfg.cluster}: {names}")
            return self.report
        targets = [self.cfg.member] if self.cfg.member else names
        problems = health_problems(view)
        if problems:
            return self.skip_all(targets, "cluster unhealthy: " + "; ".join(problems), view)
        if not self.cfg.dry_run:
            # compaction first, as etcd-defrag does: the rule then sees the space it freed
            self.compaction.once(view)
            view = self.client.view()
        if view.nospace:
            return self.run_nospace(view, targets)
        if self.cfg.dry_run:
            return self.defrag_members(view, targets)
        if self.cfg.member is not None:
            waited = self.wait_for_followers(view)
            if waited is None:
                return self.report
            view = waited
        lock = DefragLock(self.client, self.cfg, self.log)
        if not lock.acquire(self.sleep, self.clock):
            return self.skip_all(
                targets, f"lock {lock.key} still held after {self.cfg.lock_wait_seconds:.0f}s", view
            )
        try:
            return self.defrag_members(self.client.view(), targets, lock)
        finally:
            lock.release()
            self.write_records()

    def run_nospace(self, view: ClusterView, targets: list[str]) -> RunReport:
        # etcd refuses lease grants and writes under NOSPACE, so the lock cannot be taken: only the
        # leader's agent acts (one actor per term), on every member, followers first.
        if self.cfg.member is not None and view.leader != self.cfg.member:
            return self.skip_all(
                targets,
                f"NOSPACE alarm: the leader's agent ({view.leader}) recovers the "
                "cluster (no lock can be taken under NOSPACE)",
                view,
            )
        self.report.notes.append("NOSPACE alarm active: running without the lock, every member, leader last")
        self.defrag_members(view, [m.name for m in view.members])
        if not self.cfg.dry_run:
            self.write_records()
        return self.report

    def wait_for_followers(self, view: ClusterView) -> ClusterView | None:
        """The leader's agent waits while a follower is due, so the leader is defragmented last."""
        member = self.cfg.member
        if member is None or view.leader != member or self.cfg.settings.move_leader:
            return view
        # the followers' statuses must show what the compaction freed, or none looks due
        view = self.compaction.settle(view, *(m.name for m in view.members if m.name != member))
        deadline = self.clock() + self.cfg.leader_wait_seconds
        while due := followers_due(view, self.cfg.settings, self.clock()):
            if self.clock() >= deadline:
                # their agents are not running (timer off, node busy): do not starve the leader
                waited = f"{self.cfg.leader_wait_seconds:.0f}s"
                note = f"leader waited {waited}; followers still due: {', '.join(due)}"
                self.report.notes.append(note)
                self.log(f"cluster={self.cfg.cluster} member={member} {note}; going on")
                return view
            self.log(
                f"cluster={self.cfg.cluster} member={member} is leader; waiting for due "
                f"followers {', '.join(due)}"
            )
            self.sleep(self.cfg.poll_seconds * 2)
            view = self.client.view()
            if problems := health_problems(view):
                self.skip_all([member], "cluster unhealthy: " + "; ".join(problems), view)
                return None
            if view.leader != member:
                return view
        return view

    def defrag_members(
        self, view: ClusterView, targets: list[str], lock: DefragLock | None = None
    ) -> RunReport:
        order = defrag_order(view, targets)
        for index, name in enumerate(order):
            if index:
                view = self.client.view()
            if problems := health_problems(view):
                return self.skip_all(order[index:], "cluster unhealthy: " + "; ".join(problems), view)
            view = self.compaction.settle(view, name)
            decision = decide(view, name, self.cfg.settings, self.clock())
            status = view.statuses[name]
            if not decision.due:
                self.outcome(name, "skipped", decision.reason, view, status)
                continue
            if self.cfg.dry_run:
                self.outcome(name, "would-defragment", decision.reason, view, status)
                continue
            self.defrag_one(view, name, decision.reason, lock)
        self.disarm()
        return self.report

    def defrag_one(self, view: ClusterView, name: str, reason: str, lock: DefragLock | None) -> None:
        member = view.member(name)
        assert member is not None
        before = view.statuses[name]
        if before.is_leader and self.cfg.settings.move_leader:
            target = move_leader_target(view, name)
            if target is not None:
                try:
                    self.client.gateway(member.endpoint).move_leader(target.member_id)
                    self.log(f"cluster={self.cfg.cluster} action=moved-leader from={name} to={target.name}")
                except EtcdError as err:
                    self.log(f"cluster={self.cfg.cluster} action=move-leader-failed from={name} error={err}")
        if lock is not None:
            lock.avoid = member.endpoint
        started = self.clock()
        gateway = self.client.gateway(member.endpoint)
        try:
            gateway.defragment(self.cfg.defrag_timeout_seconds)
            after = gateway.status()
        except EtcdError as err:
            self.outcome(
                name,
                "failed",
                f"{reason}; defragment failed: {err.message}",
                view,
                before,
                seconds=self.clock() - started,
            )
            return
        finally:
            if lock is not None:
                lock.avoid = None
        self.outcome(name, "defragmented", reason, view, before, after, self.clock() - started)
        self._records.append(
            (name, LastDefrag(round(self.clock(), 3), before.db_size, after.db_size, self.cfg.by))
        )
        if not view.nospace:
            self.write_records()

    def disarm(self) -> None:
        view = self.client.view(with_last=False)
        if not view.nospace or self.cfg.dry_run:
            return
        ready, why = disarm_ready(view, self.cfg.settings)
        if not ready:
            self.report.notes.append(f"NOSPACE kept: {why}")
            self.log(f"cluster={self.cfg.cluster} action=nospace-kept reason={why}")
            return
        for alarm in view.alarms:
            if alarm.alarm == "NOSPACE":
                self.client.first("disarm", alarm)
                self.report.disarmed.append(alarm.member_id)
        self.log(
            f"cluster={self.cfg.cluster} action=nospace-disarmed members={','.join(self.report.disarmed)} "
            f"reason={why}"
        )

    def write_records(self) -> None:
        while self._records:
            name, record = self._records[0]
            try:
                self.client.first("put", last_key(self.cfg.cluster, name), record.to_json())
            except EtcdError as err:
                self.log(f"cluster={self.cfg.cluster} member={name} last-defrag record not written: {err}")
                return
            self._records.pop(0)
