"""Defragmentation policy: cluster health gate, per-member due decision, leader-last order, NOSPACE disarm.

Pure functions over snapshots of a cluster (no I/O). The agent on every etcd member and
`ufcctl etcd defrag` on the controller both decide with these functions; the sequence of
operations (lock, compaction, defrag, record) lives in ufcctl/nodeside/etcd_defrag.py.

Standard library only: this module is shipped to etcd nodes with the agent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ufcctl.domain.etcd.rule import Rule, RuleError, rule_variables

NOSPACE = "NOSPACE"
# Keys the agents keep in the cluster they maintain, outside kube-apiserver's /registry prefix.
KEY_PREFIX = "/ufcctl/etcd-defrag"


@dataclass(frozen=True)
class Member:
    """One entry of the member list."""

    member_id: str  # uint64 as the decimal string the JSON gateway returns
    name: str
    client_urls: tuple[str, ...]
    is_learner: bool = False
    peer_urls: tuple[str, ...] = ()

    @property
    def endpoint(self) -> str:
        return self.client_urls[0] if self.client_urls else ""


@dataclass(frozen=True)
class MemberStatus:
    """One member's answer to Maintenance.Status."""

    member_id: str
    leader_id: str
    db_size: int
    db_size_in_use: int
    revision: int
    raft_term: int
    raft_index: int
    version: str = ""
    errors: tuple[str, ...] = ()

    @property
    def is_leader(self) -> bool:
        return self.member_id == self.leader_id and self.leader_id not in ("", "0")

    @property
    def free_bytes(self) -> int:
        return max(self.db_size - self.db_size_in_use, 0)

    @property
    def fragmentation_percent(self) -> float:
        return 100.0 * self.free_bytes / self.db_size if self.db_size else 0.0


@dataclass(frozen=True)
class Alarm:
    member_id: str
    alarm: str  # NOSPACE, CORRUPT, ...


@dataclass(frozen=True)
class LastDefrag:
    """What the last defrag of a member recorded in etcd (KEY_PREFIX/<cluster>/last/<member>)."""

    at: float  # unix seconds
    before: int
    after: int
    by: str

    def to_json(self) -> str:
        return json.dumps({"at": self.at, "before": self.before, "after": self.after, "by": self.by})

    @staticmethod
    def from_json(text: str) -> LastDefrag | None:
        try:
            data = json.loads(text)
            return LastDefrag(float(data["at"]), int(data["before"]), int(data["after"]), str(data["by"]))
        except (ValueError, KeyError, TypeError):
            return None  # a record written by something else: treat as never defragmented


@dataclass(frozen=True)
class ClusterView:
    """A snapshot of one cluster: members, each member's status (or why it has none), alarms."""

    cluster: str
    members: tuple[Member, ...]
    statuses: Mapping[str, MemberStatus] = field(default_factory=dict)  # by member name
    unreachable: Mapping[str, str] = field(default_factory=dict)  # member name -> error
    alarms: tuple[Alarm, ...] = ()
    last: Mapping[str, LastDefrag] = field(default_factory=dict)  # by member name

    def member(self, name: str) -> Member | None:
        return next((m for m in self.members if m.name == name), None)

    @property
    def leader(self) -> str | None:
        """The leader's name as the reachable members report it (None when they disagree or none)."""
        leader_ids = {s.leader_id for s in self.statuses.values()}
        if len(leader_ids) != 1:
            return None
        (leader_id,) = leader_ids
        member = next((m for m in self.members if m.member_id == leader_id), None)
        return member.name if member else None

    @property
    def alarm_names(self) -> tuple[str, ...]:
        return tuple(sorted({a.alarm for a in self.alarms}))

    @property
    def nospace(self) -> bool:
        return any(a.alarm == NOSPACE for a in self.alarms)


@dataclass(frozen=True)
class DefragSettings:
    """Per-cluster knobs; the role's defaults (roles/etcd/defaults/main.yml) carry the same values."""

    rule: Rule
    quota_bytes: int
    # A member defragmented less than this long ago is not due again, so a rule that stays true
    # after a defrag (e.g. dbQuotaUsage > 0.8 with that much live data) cannot loop.
    min_interval_seconds: float = 3600.0
    # Revisions kept by the compaction before a defrag; 0 compacts to the current revision.
    compaction_keep_revisions: int = 1000
    disarm_threshold: float = 0.9
    move_leader: bool = False


@dataclass(frozen=True)
class Decision:
    member: str
    due: bool
    reason: str
    variables: Mapping[str, float] = field(default_factory=dict)


def lock_key(cluster: str) -> str:
    return f"{KEY_PREFIX}/{cluster}/lock"


def settle_key(cluster: str) -> str:
    """Written just before a member's rule is evaluated, so its backend commits (see nodeside/etcd_defrag)."""
    return f"{KEY_PREFIX}/{cluster}/settle"


def last_key(cluster: str, member: str) -> str:
    return f"{KEY_PREFIX}/{cluster}/last/{member}"


def last_prefix(cluster: str) -> str:
    return f"{KEY_PREFIX}/{cluster}/last/"


def health_problems(view: ClusterView) -> list[str]:
    """Why nothing may happen on this cluster now (empty list: healthy enough to defragment).

    Like etcd-defrag: every member must answer, no alarm other than NOSPACE may be active, and
    the members must agree on one leader.
    """
    problems: list[str] = []
    if not view.members:
        return ["no member list"]
    for member in view.members:
        if member.is_learner:
            problems.append(f"member {member.name or member.member_id} is a learner")
        elif not member.name:
            problems.append(f"member {member.member_id} was added but never started")
        elif member.name in view.unreachable:
            problems.append(f"member {member.name} unreachable: {view.unreachable[member.name]}")
        elif member.name not in view.statuses:
            problems.append(f"member {member.name} has no status")
        elif errors := status_errors(view.statuses[member.name]):
            problems.append(f"member {member.name} reports: {'; '.join(errors)}")
    other = sorted({a.alarm for a in view.alarms if a.alarm != NOSPACE})
    if other:
        problems.append(f"alarm(s) active: {', '.join(other)}")
    if view.statuses and view.leader is None:
        problems.append("members do not agree on a leader")
    return problems


def status_errors(status: MemberStatus) -> list[str]:
    """Errors a member reports in its status, minus active alarms (etcd lists those there too, as
    "memberID:N alarm:NOSPACE"; alarms are judged from the alarm list instead)."""
    return [e for e in status.errors if " alarm:" not in f" {e}"]


def decide(view: ClusterView, name: str, settings: DefragSettings, now: float) -> Decision:
    """Whether member `name` is due: its status satisfies the rule and it was not defragmented lately."""
    status = view.statuses.get(name)
    if status is None:
        return Decision(name, False, f"no status ({view.unreachable.get(name, 'unknown member')})")
    variables = rule_variables(status.db_size, status.db_size_in_use, settings.quota_bytes)
    if view.nospace:
        # a defrag is the only way out, and etcd refuses the writes that would let dbSizeInUse show
        # what the compaction freed (see nodeside/etcd_compaction.py Compaction.settle): the rule is not
        # consulted
        return Decision(name, True, "NOSPACE alarm: every member is defragmented to recover", variables)
    try:
        wanted = settings.rule.evaluate(variables)
    except RuleError as err:
        return Decision(name, False, f"rule failed: {err}", variables)
    if not wanted:
        return Decision(name, False, f"rule false: {settings.rule.text}", variables)
    last = view.last.get(name)
    if last is not None and now - last.at < settings.min_interval_seconds:
        ago = int(now - last.at)
        return Decision(
            name,
            False,
            f"defragmented {ago}s ago (min interval {int(settings.min_interval_seconds)}s)",
            variables,
        )
    return Decision(name, True, f"rule true: {settings.rule.text}", variables)


def defrag_order(view: ClusterView, names: Sequence[str]) -> list[str]:
    """`names` with followers first (member-list order) and the leader last."""
    order = [m.name for m in view.members if m.name in names]
    order += [n for n in names if n not in order]
    leader = view.leader
    if leader in order:
        order.remove(leader)
        order.append(leader)
    return order


def followers_due(view: ClusterView, settings: DefragSettings, now: float) -> list[str]:
    """Followers that are due: the leader's agent waits for them, so the leader goes last."""
    leader = view.leader
    return [m.name for m in view.members if m.name != leader and decide(view, m.name, settings, now).due]


def settled_leader_index(view: ClusterView, member: str) -> int | None:
    """The leader's raft index once every member answers without errors under one leader, `member`
    among them; None while not (a member restarting, an election). A member is caught up when its
    own index reaches the first such value seen after its restart (`ufcctl certs renew`)."""
    if view.leader is None or view.unreachable or member not in view.statuses:
        return None
    if len(view.statuses) != len(view.members) or any(status_errors(s) for s in view.statuses.values()):
        return None
    return view.statuses[view.leader].raft_index


def move_leader_target(view: ClusterView, exclude: str) -> Member | None:
    """The follower most up to date (highest raft index) to hand leadership to before defragmenting."""
    candidates = [
        (view.statuses[m.name].raft_index, m.name, m)
        for m in view.members
        if m.name != exclude and m.name in view.statuses and not m.is_learner
    ]
    return max(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None


def compaction_revision(revision: int, keep: int) -> int | None:
    """The revision to compact to before a defrag, or None when there is nothing to compact."""
    target = revision - max(keep, 0)
    return target if target > 1 else None


def disarm_ready(view: ClusterView, settings: DefragSettings) -> tuple[bool, str]:
    """A NOSPACE alarm may be disarmed when every member is back below threshold x quota."""
    if not view.nospace:
        return False, "no NOSPACE alarm"
    limit = settings.disarm_threshold * settings.quota_bytes
    over = [f"{n} ({s.db_size} bytes)" for n, s in view.statuses.items() if s.db_size >= limit]
    missing = [m.name for m in view.members if m.name not in view.statuses]
    if over or missing:
        why = ", ".join(over + [f"{n} (no status)" for n in missing])
        return False, f"still at or above {settings.disarm_threshold:.0%} of quota: {why}"
    return True, f"every member below {settings.disarm_threshold:.0%} of quota"
