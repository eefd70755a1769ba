"""`ufcctl certs renew`'s plan: which certificates are renewed, on which hosts, in what order.

Pure: `certs check`'s rows in (read with the renewal threshold as warn days), the etcd topology and
each cluster's leader, the control planes, the controller's copy of the site's registry certificate in,
a plan out, in three parts and this order (`plan_all`): etcd, kubeadm, registry.

etcd (`plan_renewal`): every certificate etcd's CA signs (roles/etcd:
each member's peer/server certificate and the defrag agent's client certificate, kube-apiserver's
etcd client certificate on the control planes, ufcctl's own on the controller) that has fewer days
left than the threshold (the one `certs check` warns at), or all of them with --force. Never a CA
(that is a trust-bundle rotation, not a renewal). The order: one host at a time, hosts that lead no
cluster first and leaders last, so each cluster's leader is restarted last; the member certificate
serves every cluster on its host, so a host's members are restarted one after the other.

kubeadm (`plan_kubeadm`): a control plane with one of kubeadm's certificates due (or all, --force) gets
`kubeadm certs renew all` (kubeadm renews every one it manages there at once, so all are listed) and its
kube-apiserver restarted out of haproxy's backends; a control plane whose kube-apiserver etcd client
certificate the etcd part renews gets the restart alone (kube-apiserver reads that file at start only),
whatever --only says. After etcd: that restart then loads both.

registry (`plan_registry`): ufcctl cannot sign the site's certificate; a cache host whose tls.crt is not
the controller's registry_cache_tls_cert_src (or every one, --force) gets the controller's copied again
and its instances restarted. A cache certificate that is due while the controller has the same one is a
note (the site must put a renewed one there first), not a step. Last: nothing else depends on it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ufcctl.domain.certs.catalog import CATALOG, CONTROLLER
from ufcctl.domain.certs.check import EXPIRED, MISSING, SOON, UNREACHABLE, UNREADABLE, CertRow

ETCD, KUBEADM, REGISTRY = "etcd", "kubeadm", "registry"
# what --only may name (etcd:<cluster> narrows etcd to one cluster's members), in the order they run
COMPONENTS = (ETCD, KUBEADM, REGISTRY)
# the catalog's entries etcd's CA signs (issuer "etcd"): the member, agent, kube-apiserver and
# ufcctl client certificates; the CA itself ("etcd-ca") is not renewed
ETCD_SIGNED = frozenset(c.what for c in CATALOG if c.issuer == "etcd")
MEMBER_WHAT = next(c.what for c in CATALOG if c.issuer == "etcd" and c.path.endswith("/member.crt"))
BROKEN = frozenset({MISSING, UNREADABLE, UNREACHABLE})
# the catalog's entries `kubeadm certs renew all` signs again (issuer "kubeadm", not a CA)
KUBEADM_RENEWED = frozenset(c.what for c in CATALOG if c.issuer == "kubeadm" and not c.what.endswith(" CA"))
APISERVER_ETCD_CLIENT = next(c.what for c in CATALOG if c.path.endswith("/apiserver-etcd-client.crt"))
REGISTRY_WHAT = next(c.what for c in CATALOG if c.issuer == "site")
APISERVER, REGISTRY_INSTANCES = "kube-apiserver", "registry cache instances"


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
    """--only etcd | etcd:<cluster> | kubeadm | registry (repeatable; none: everything renew knows).
    `clusters`: the inventory's etcd clusters."""
    if not values:
        return Selection(frozenset(COMPONENTS))
    components: set[str] = set()
    narrowed: set[str] = set()
    whole = False
    for value in values:
        name, colon, cluster = value.strip().partition(":")
        if name not in COMPONENTS or (colon and name != ETCD):
            raise PlanError(f"--only {value!r}: unknown; use one of: "
                            + ", ".join([ETCD, *(f"etcd:{c}" for c in clusters), KUBEADM, REGISTRY]))
        components.add(name)
        if name != ETCD:
            continue
        if colon and not cluster:  # `etcd:$CLUSTER` with the variable unset: never "every cluster"
            named = ", ".join(f"etcd:{c}" for c in clusters) or "none"
            raise PlanError(f"--only {value!r}: no cluster after 'etcd:' (an unset variable?); name one "
                            f"({named}), or --only etcd for every cluster")
        if not cluster:
            whole = True
        elif cluster not in clusters:
            raise PlanError(f"--only {value!r}: no etcd cluster {cluster!r} in the inventory "
                            f"(clusters: {', '.join(clusters) or 'none'})")
        else:
            narrowed.add(cluster)
    return Selection(frozenset(components), None if whole or ETCD not in components else frozenset(narrowed))


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
    """One host: its certificates renewed, then these restarted in this order (etcd: the clusters whose
    member on this host restarts; kubeadm: kube-apiserver; registry: the cache's instances)."""

    host: str
    items: tuple[Item, ...]
    restart: tuple[str, ...]
    leads: tuple[str, ...] = ()  # etcd clusters this host led when planned (leadership handed over first)
    kind: str = ETCD
    note: str = ""  # why a step with no certificate runs

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "host": self.host, "restart": list(self.restart),
                "leads": list(self.leads), "note": self.note,
                "certificates": [i.to_json() for i in self.items]}


@dataclass(frozen=True)
class RenewPlan:
    steps: tuple[Step, ...]
    controller: tuple[Item, ...]  # renewed on the controller, in the first step's run
    within_days: int
    force: bool
    problems: tuple[str, ...] = field(default=())  # why it cannot start (a certificate missing, ...)
    notes: tuple[str, ...] = field(default=())  # due, but not renewable here (the site's certificate)

    @property
    def empty(self) -> bool:
        return not self.steps and not self.controller

    @property
    def count(self) -> int:
        return len(self.controller) + sum(len(s.items) for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {"within_days": self.within_days, "force": self.force, "certificates": self.count,
                "controller": [i.to_json() for i in self.controller],
                "steps": [s.to_json() for s in self.steps], "problems": list(self.problems),
                "notes": list(self.notes)}


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


def _problem(row: CertRow) -> str:
    return f"{row.host}:{row.path}: {row.status}{': ' + row.detail if row.detail else ''}"


def plan_kubeadm(rows: Sequence[CertRow], control_planes: Sequence[str], selection: Selection,
                 etcd_steps: Sequence[Step], *, within_days: int, force: bool,
                 ) -> tuple[tuple[Step, ...], tuple[str, ...]]:
    """One step per control plane (the inventory's order) with a kubeadm certificate due (all with
    --force), or whose kube-apiserver etcd client certificate `etcd_steps` renew (a restart alone);
    and the problems (a chosen certificate missing, unreadable, or its host not answering)."""
    chosen = KUBEADM in selection.components
    reloads = {s.host for s in etcd_steps for i in s.items if i.what == APISERVER_ETCD_CLIENT}
    steps, problems = [], []
    for host in control_planes:
        mine = [r for r in rows if r.host == host and (r.what in KUBEADM_RENEWED or r.path == "-")]
        if chosen:
            problems += [_problem(r) for r in mine if r.status in BROKEN]
        due = {r.path: why for r in mine if r.status not in BROKEN and (why := _why(r, force, within_days))}
        if chosen and due:
            items = tuple(Item(host, r.path, r.what, r.days_left,
                               due.get(r.path) or "renewed with the rest (kubeadm certs renew all)")
                          for r in mine if r.status not in BROKEN)
            steps.append(Step(host, items, (APISERVER,), kind=KUBEADM))
        elif host in reloads:
            steps.append(Step(host, (), (APISERVER,), kind=KUBEADM,
                              note="restart only: kube-apiserver loads its renewed etcd client certificate"))
    return tuple(steps), tuple(problems)


@dataclass(frozen=True)
class SiteCert:
    """The controller's copy of the site's registry certificate (registry_cache_tls_cert_src) for one
    cache host: its path, and its sha256 or why it cannot be read."""

    path: str
    sha256: str = ""
    error: str = ""


def plan_registry(rows: Sequence[CertRow], sources: Mapping[str, SiteCert], selection: Selection, *,
                  within_days: int, force: bool) -> tuple[tuple[Step, ...], tuple[str, ...], tuple[str, ...]]:
    """Steps (one per cache host whose tls.crt is not the controller's, or every one with --force),
    problems and notes (due, but the controller has the same certificate: the site's to renew)."""
    if REGISTRY not in selection.components:
        return (), (), ()
    steps, problems, notes = [], [], []
    for row in rows:
        if row.what != REGISTRY_WHAT and not (row.path == "-" and row.host in sources):
            continue
        if row.status in BROKEN:
            problems.append(_problem(row))
            continue
        site = sources.get(row.host)
        if site is None or site.error:
            problems.append(f"{row.host}: registry_cache_tls_cert_src "
                            f"{site.path if site else '(not set)'} on the controller: "
                            f"{site.error if site else 'not set'}")
            continue
        due = _why(row, False, within_days)
        if site.sha256 != row.sha256:
            why = "the controller's certificate differs" + (f" ({due})" if due else "")
        elif force:
            why = "forced (the same certificate: copied, instances restarted)"
        else:
            if due:
                notes.append(f"{row.host}:{row.path}: {due}, and {site.path} on the controller is the "
                             "same certificate: ufcctl cannot sign the site's certificate; put the renewed "
                             "one (and its key) there, then run this again")
            continue
        steps.append(Step(row.host, (Item(row.host, row.path, row.what, row.days_left, why),),
                          (REGISTRY_INSTANCES,), kind=REGISTRY))
    return tuple(steps), tuple(problems), tuple(notes)


def plan_all(rows: Sequence[CertRow], members: Mapping[str, Sequence[str]], leaders: Mapping[str, str | None],
             selection: Selection, *, control_planes: Sequence[str], sources: Mapping[str, SiteCert],
             within_days: int, force: bool) -> RenewPlan:
    """The whole plan: etcd's steps, then the control planes', then the registry caches'."""
    etcd = plan_renewal(rows, members, leaders, selection, within_days=within_days, force=force)
    kubeadm, kubeadm_problems = plan_kubeadm(rows, control_planes, selection, etcd.steps,
                                             within_days=within_days, force=force)
    registry, registry_problems, notes = plan_registry(rows, sources, selection, within_days=within_days,
                                                       force=force)
    return RenewPlan((*etcd.steps, *kubeadm, *registry), etcd.controller, within_days, force,
                     tuple(dict.fromkeys((*etcd.problems, *kubeadm_problems, *registry_problems))), notes)
