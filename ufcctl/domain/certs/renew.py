"""`ufcctl certs renew`'s plan: which certificates are renewed, on which hosts, in what order.

Pure: `certs check`'s rows in (read with the renewal threshold as warn days), the etcd topology and
each cluster's leader in, a plan out. What gets renewed: every certificate etcd's CA signs (roles/etcd:
each member's peer/server certificate and the defrag agent's client certificate, kube-apiserver's
etcd client certificate on the control planes, ufcctl's own on the controller) that has fewer days
left than the threshold (the one `certs check` warns at), or all of them with --force. Never a CA
(that is a trust-bundle rotation, not a renewal). The order: one host at a time, hosts that lead no
cluster first and leaders last, so each cluster's leader is restarted last; the member certificate
serves every cluster on its host, so a host's members are restarted one after the other.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ufcctl.domain.certs.catalog import CATALOG, CONTROLLER
from ufcctl.domain.certs.check import EXPIRED, MISSING, SOON, UNREACHABLE, UNREADABLE, CertRow

ETCD = "etcd"
COMPONENTS = (ETCD,)  # what --only may name (etcd:<cluster> narrows etcd to one cluster's members)
# the catalog's entries etcd's CA signs (issuer "etcd"): the member, agent, kube-apiserver and
# ufcctl client certificates; the CA itself ("etcd-ca") is not renewed
ETCD_SIGNED = frozenset(c.what for c in CATALOG if c.issuer == "etcd")
MEMBER_WHAT = next(c.what for c in CATALOG if c.issuer == "etcd" and c.path.endswith("/member.crt"))
BROKEN = frozenset({MISSING, UNREADABLE, UNREACHABLE})


class PlanError(ValueError):
    """Input the plan cannot be made from (a bad --only)."""


@dataclass(frozen=True)
class Selection:
    """What --only chose: etcd, and within it every cluster (None) or these."""

    components: frozenset[str]
    etcd_clusters: frozenset[str] | None = None

    @property
    def everything(self) -> bool:
        return self.etcd_clusters is None


def parse_only(values: Sequence[str], clusters: Collection[str]) -> Selection:
    """--only etcd | etcd:<cluster> (repeatable; none: everything renew knows). `clusters`: the
    inventory's etcd clusters."""
    if not values:
        return Selection(frozenset(COMPONENTS))
    components: set[str] = set()
    narrowed: set[str] = set()
    whole = False
    for value in values:
        name, _, cluster = value.strip().partition(":")
        if name not in COMPONENTS:
            raise PlanError(f"--only {value!r}: unknown; use one of: etcd, "
                            + ", ".join(f"etcd:{c}" for c in clusters))
        components.add(name)
        if not cluster:
            whole = True
        elif cluster not in clusters:
            raise PlanError(f"--only {value!r}: no etcd cluster {cluster!r} in the inventory "
                            f"(clusters: {', '.join(clusters) or 'none'})")
        else:
            narrowed.add(cluster)
    return Selection(frozenset(components), None if whole else frozenset(narrowed))


@dataclass(frozen=True)
class Item:
    """One certificate to renew."""

    host: str
    path: str
    what: str
    days_left: int | None
    why: str

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()


@dataclass(frozen=True)
class Step:
    """One host: its certificates renewed, then these members restarted in this order."""

    host: str
    items: tuple[Item, ...]
    restart: tuple[str, ...]  # clusters whose member on this host restarts
    leads: tuple[str, ...] = ()  # clusters this host led when planned (leadership is handed over first)

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "restart": list(self.restart), "leads": list(self.leads),
                "certificates": [i.to_json() for i in self.items]}


@dataclass(frozen=True)
class RenewPlan:
    steps: tuple[Step, ...]
    controller: tuple[Item, ...]  # renewed on the controller, in the first step's run
    within_days: int
    force: bool
    problems: tuple[str, ...] = field(default=())  # why it cannot start (a certificate missing, ...)

    @property
    def empty(self) -> bool:
        return not self.steps and not self.controller

    @property
    def count(self) -> int:
        return len(self.controller) + sum(len(s.items) for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {"within_days": self.within_days, "force": self.force, "certificates": self.count,
                "controller": [i.to_json() for i in self.controller],
                "steps": [s.to_json() for s in self.steps], "problems": list(self.problems)}


def in_scope(row: CertRow, selection: Selection, members: Mapping[str, Sequence[str]]) -> bool:
    """Whether --only chose this row: an etcd-signed certificate on a chosen cluster's member (every
    host of the inventory's etcd groups and control planes with no narrowing; the controller's only then)."""
    if ETCD not in selection.components:
        return False
    if row.status == UNREACHABLE and row.path == "-":  # a host that did not answer (check.unreachable_row)
        chosen = selection.etcd_clusters
        return chosen is None or any(row.host in members.get(c, ()) for c in chosen)
    if row.what not in ETCD_SIGNED:
        return False
    if selection.etcd_clusters is None:
        return True
    return row.host != CONTROLLER and any(row.host in members.get(c, ()) for c in selection.etcd_clusters)


def _why(row: CertRow, force: bool, within_days: int) -> str | None:
    if row.status == EXPIRED:
        return "expired"
    if row.status == SOON:
        return f"{row.days_left} days left, fewer than {within_days}"
    return "forced" if force else None


def plan_renewal(rows: Sequence[CertRow], members: Mapping[str, Sequence[str]],
                 leaders: Mapping[str, str | None], selection: Selection, *, within_days: int,
                 force: bool) -> RenewPlan:
    """The plan from `certs check`'s rows judged at `within_days`. `members`: cluster -> member hosts
    (the inventory's order); `leaders`: cluster -> the current leader. A chosen certificate that is
    missing, unreadable or on a host that did not answer makes a problem: nothing may start."""
    chosen = [r for r in rows if in_scope(r, selection, members)]
    problems = tuple(f"{r.host}:{r.path}: {r.status}{': ' + r.detail if r.detail else ''}"
                     for r in chosen if r.status in BROKEN)
    by_host: dict[str, list[Item]] = {}
    for row in chosen:
        why = None if row.status in BROKEN else _why(row, force, within_days)
        if why:
            by_host.setdefault(row.host, []).append(Item(row.host, row.path, row.what, row.days_left, why))
    controller = tuple(by_host.pop(CONTROLLER, ()))
    order = [h for h in dict.fromkeys(r.host for r in rows) if h in by_host]
    steps = []
    for host in order:
        items = tuple(by_host[host])
        clusters = tuple(c for c, hosts in members.items() if host in hosts)
        restart = clusters if any(i.what == MEMBER_WHAT for i in items) else ()
        leads = tuple(c for c in clusters if leaders.get(c) == host)
        steps.append(Step(host, items, restart, leads))
    if controller and not steps:
        # ufcctl's own certificate is signed in an etcd host's run (the role's controller-side
        # tasks): the first member's, where nothing else is due and no member restarts
        first = next((hosts[0] for hosts in members.values() if hosts), None)
        if first is not None:
            steps.append(Step(first, (), ()))
    # leaders last: a host leading more clusters comes later; the inventory's order otherwise
    steps.sort(key=lambda s: len(s.leads))
    return RenewPlan(tuple(steps), controller, within_days, force, problems)


def successor(raft_index: Mapping[str, int], leaving: str, done: Collection[str]) -> str | None:
    """Whom a leader about to restart hands leadership to: a member renewed already (so the leader
    stays on a member that will not restart again), else the most up-to-date one; None when alone."""
    candidates = [(name in done, index, name) for name, index in raft_index.items() if name != leaving]
    return max(candidates)[2] if candidates else None
