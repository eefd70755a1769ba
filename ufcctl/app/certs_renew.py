"""Use case `ufcctl certs renew`: the certificates etcd's CA signs, renewed one host at a time with no
etcd cluster losing quorum or a write; then kubeadm's on one control plane at a time, each out of
haproxy's backends while its kube-apiserver restarts (the VIP keeps answering); then the site's registry
cache certificate copied again to one cache host at a time.

Before anything changes: every etcd cluster must be healthy, and the plan (ufcctl/domain/certs/renew.py)
is made from the same reading `certs check` makes, at the renewal threshold. Then, host by host
(leaders last): a cluster this host leads hands leadership to another member (etcd's MoveLeader),
playbooks/certs-renew.yml signs the host's certificates again with the existing CA and keys and
restarts its members one at a time (each healthy before the next), and ufcctl waits until every
member of those clusters is healthy and the restarted one holds everything the leader had committed
when the run ended, before the next host. A control plane: playbooks/certs-renew-kubeadm.yml (roles/
kube_control_plane tasks/certs_renew.yml). A cache host: playbooks/certs-renew-registry.yml (roles/
registry_cache tasks/renew.yml).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ufcctl.app.certs import read_certificates
from ufcctl.app.etcd_maint import Target, cluster_targets, etcd_status
from ufcctl.app.inventory import load_inventory
from ufcctl.domain.certs.catalog import CONTROL_PLANE, REGISTRY_CACHE
from ufcctl.domain.certs.check import sha256_of
from ufcctl.domain.certs.renew import (
    ETCD,
    KUBEADM,
    REGISTRY,
    PlanError,
    RenewPlan,
    Selection,
    SiteCert,
    Step,
    parse_only,
    plan_all,
    successor,
)
from ufcctl.domain.etcd.defrag import ClusterView, settled_leader_index, status_errors
from ufcctl.domain.inventory.model import Inventory
from ufcctl.engine.etcd_client import EtcdError
from ufcctl.engine.locks import holding
from ufcctl.engine.pki_files import bytes_of
from ufcctl.engine.runner import RunOptions, new_run_id, run_playbook
from ufcctl.errors import InputError, RunFailed
from ufcctl.paths import playbook

PLAYBOOK = "certs-renew.yml"
KUBEADM_PLAYBOOK = "certs-renew-kubeadm.yml"
REGISTRY_PLAYBOOK = "certs-renew-registry.yml"
LB_GROUP = "apiserver_lb"
# Seconds a cluster has, after a host's run, to be healthy with the restarted member caught up; and a
# leader handover to show. A restarted member is back in about a second on the lab; etcd's own
# election timeout is 1-10 s at the role's settings: 120 s only stops a run that will not recover.
SETTLE_TIMEOUT = 120.0
POLL = 0.25


@dataclass(frozen=True)
class HostTime:
    host: str
    seconds: float
    handovers: tuple[str, ...] = ()  # "core: cp1 -> cp2"
    kind: str = ETCD


@dataclass
class RenewResult:
    plan: RenewPlan
    check: bool
    times: list[HostTime] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"plan": self.plan.to_json(), "check": self.check, "seconds": round(self.seconds, 1),
                "hosts": [{"kind": t.kind, "host": t.host, "seconds": round(t.seconds, 1),
                           "handovers": list(t.handovers)} for t in self.times]}


def certs_renew(inventory_dir: Path, *, only: tuple[str, ...], within_days: int, force: bool, check: bool,
                forks: int, log: Callable[[str], None] = print,
                now: dt.datetime | None = None) -> RenewResult:
    """Plan, then (unless `check` or nothing is due) renew host by host. Refuses (InputError, nothing
    touched) a bad --only, hosts another run holds (naming it), a cluster that is not healthy, and a chosen
    certificate that is missing, unreadable or on a host that does not answer."""
    inventory = load_inventory(inventory_dir)
    targets = cluster_targets(inventory_dir, None, inventory)
    members = {t.cluster.name: [m.host for m in t.cluster.members] for t in targets}
    try:
        selection = parse_only(only, list(members))
    except PlanError as err:
        raise InputError(str(err), "`ufcctl certs renew --help` lists what --only takes") from err
    caches = inventory.group_hosts(REGISTRY_CACHE) if REGISTRY in selection.components else []
    names = list(dict.fromkeys([*(h for hosts in members.values() for h in hosts),
                                *inventory.group_hosts(CONTROL_PLANE), *caches]))
    # every host a renewal may change (haproxy's too: a control plane leaves its backends), locked before
    # anything is read, for the whole run; --check changes nothing and takes no lock
    changed = [*names, *(inventory.group_hosts(LB_GROUP) if KUBEADM in selection.components else [])]
    span = nullcontext() if check else holding(new_run_id("certs-renew"), list(dict.fromkeys(changed)))
    with span:
        return _plan_and_renew(inventory_dir, inventory, targets, members, selection, names, caches,
                               within_days=within_days, force=force, check=check, forks=forks, log=log,
                               now=now or dt.datetime.now(dt.UTC))


def _plan_and_renew(inventory_dir: Path, inventory: Inventory, targets: list[Target],
                    members: dict[str, list[str]], selection: Selection, names: list[str],
                    caches: list[str], *, within_days: int, force: bool, check: bool, forks: int,
                    log: Callable[[str], None], now: dt.datetime) -> RenewResult:
    # every kind but the registry's restarts something that needs etcd: its clusters healthy first
    statuses = etcd_status(inventory_dir, inventory=inventory) if selection.components != {REGISTRY} else []
    sick = [s for s in statuses if not s.healthy]
    if sick:
        raise InputError(
            "; ".join(f"etcd cluster {s.cluster} is not healthy: {'; '.join(s.problems)}" for s in sick),
            "renewal restarts members one at a time and needs every member up first: "
            "`ufcctl etcd status`, then start the member or `ufcctl etcd member replace`")
    report = read_certificates(inventory, names, warn_days=within_days, forks=forks, controller=True, now=now)
    plan = plan_all(report.rows, members, {s.cluster: s.leader for s in statuses}, selection,
                    control_planes=inventory.group_hosts(CONTROL_PLANE),
                    sources=_site_certs(inventory, caches), within_days=within_days, force=force)
    if plan.problems:
        raise InputError(f"certs renew: {len(plan.problems)} certificate(s) cannot be renewed: "
                         + "; ".join(plan.problems[:5]),
                         "a missing or unreadable certificate is made again by `ufcctl deploy`; a host that "
                         "does not answer must be back first; registry_cache_tls_cert_src must name a "
                         "readable file on this machine")
    result = RenewResult(plan, check)
    if check or plan.empty:
        return result
    extravars: dict[str, Any] = {"etcd_cert_renew_days": within_days}
    if force:
        # notBefore is the signing time on this controller: the run's start, in whole seconds
        extravars["etcd_cert_renew_issued_before"] = now.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    began = time.monotonic()
    by_name = {t.cluster.name: t for t in targets}
    _renew_steps(inventory, plan, result, by_name, members, extravars, force, log)
    result.seconds = time.monotonic() - began
    return result


def _renew_steps(inventory: Inventory, plan: RenewPlan, result: RenewResult, targets: dict[str, Target],
                 members: dict[str, list[str]], extravars: dict[str, Any], force: bool,
                 log: Callable[[str], None]) -> None:
    done: set[str] = set()
    for step in plan.steps:
        if step.kind == KUBEADM:
            result.times.append(_renew_control_plane(inventory, step, log))
        elif step.kind == REGISTRY:
            result.times.append(_renew_cache(inventory, step, force, log))
        else:
            result.times.append(_renew_host(inventory, step, targets, members, done, extravars, log))
            done.add(step.host)


def _renew_host(inventory: Inventory, step: Step, targets: dict[str, Target], members: dict[str, list[str]],
                done: set[str], extravars: dict[str, Any], log: Callable[[str], None]) -> HostTime:
    began = time.monotonic()
    clusters = [c for c, hosts in members.items() if step.host in hosts]
    handovers = tuple(h for c in clusters
                      if step.restart and (h := _hand_over(targets[c], step.host, done, log)))
    what = ", ".join(i.path for i in step.items) or "ufcctl's client certificate only"
    log(f"{step.host}: renewing {what}" + (f"; restarting etcd {', '.join(clusters)} one at a time"
                                           if step.restart else ""))
    context = [h for h in dict.fromkeys([*(h for hosts in members.values() for h in hosts),
                                         *inventory.group_hosts(CONTROL_PLANE)]) if h != step.host]
    run = run_playbook(playbook(PLAYBOOK), inventory.subset([step.host]), RunOptions(
        forks=1, context=tuple(inventory.subset(context)),
        extravars={**extravars, "etcd_renew_restart": clusters}))
    if run.failed_of([step.host]):
        raise RunFailed(f"certs renew on {step.host} failed: {run.why(step.host)}",
                        f"details in {run.run_dir}; the hosts before it are renewed, run the command again "
                        "for the rest (a second run renews only what is still due)")
    for cluster in clusters:  # also where no restart was planned: the role restarts on a changed file
        _settle(targets[cluster], step.host)
    seconds = time.monotonic() - began
    log(f"{step.host}: done in {seconds:.1f} s")
    return HostTime(step.host, seconds, handovers)


def _run_one(name: str, inventory: Inventory, step: Step, context: list[str], extravars: dict[str, Any],
             log: Callable[[str], None]) -> HostTime:
    """One host's run of a kubeadm or registry renewal playbook (RunFailed names the host)."""
    began = time.monotonic()
    run = run_playbook(playbook(name), inventory.subset([step.host]), RunOptions(
        forks=1, context=tuple(inventory.subset([h for h in dict.fromkeys(context) if h != step.host])),
        extravars=extravars))
    if run.failed_of([step.host]):
        raise RunFailed(f"certs renew ({step.kind}) on {step.host} failed: {run.why(step.host)}",
                        f"details in {run.run_dir}; the hosts before it are renewed, run the command again "
                        "for the rest (a second run renews only what is still due)")
    seconds = time.monotonic() - began
    log(f"{step.host}: done in {seconds:.1f} s")
    return HostTime(step.host, seconds, kind=step.kind)


def _renew_control_plane(inventory: Inventory, step: Step, log: Callable[[str], None]) -> HostTime:
    """kubeadm certs renew all (or, with no certificate in the step, nothing) and kube-apiserver restarted
    while this control plane is out of every haproxy's backends (delegated to the apiserver_lb hosts)."""
    log(f"{step.host}: " + (f"kubeadm certs renew all ({len(step.items)} certificate(s))" if step.items
                            else step.note) + "; kube-apiserver restarted out of haproxy's backends")
    # the controller's copy of admin.conf is the first control plane's (roles/kube_control_plane
    # tasks/admin_conf.yml): this run's inventory is the step's host and its context, whose first control
    # plane need not be the cluster's, so ufcctl says whether this host is
    first = inventory.group_hosts(CONTROL_PLANE)[:1]
    return _run_one(KUBEADM_PLAYBOOK, inventory, step, inventory.group_hosts(LB_GROUP),
                    {"kube_control_plane_certs_renew": bool(step.items),
                     "kube_control_plane_renewed_first": first == [step.host]}, log)


def _renew_cache(inventory: Inventory, step: Step, force: bool, log: Callable[[str], None]) -> HostTime:
    log(f"{step.host}: the site's certificate copied again, instances restarted one after the other")
    return _run_one(REGISTRY_PLAYBOOK, inventory, step, [], {"registry_cache_renew_force": force}, log)


def _site_certs(inventory: Inventory, caches: list[str]) -> dict[str, SiteCert]:
    """The controller's registry_cache_tls_cert_src of each cache host (a templated value cannot be
    read here: named as such), with its certificate's sha256."""
    from cryptography import x509

    out: dict[str, SiteCert] = {}
    for host in caches:
        value = str(inventory.hosts[host].vars.get("registry_cache_tls_cert_src") or "")
        if not value or "{{" in value:
            out[host] = SiteCert(value or "(not set)", error="not a literal path this command can read"
                                 if value else "not set")
            continue
        data = bytes_of(Path(value))
        if data is None:
            out[host] = SiteCert(value, error="cannot read it")
            continue
        try:
            cert = x509.load_pem_x509_certificate(data)
        except ValueError:
            out[host] = SiteCert(value, error="no PEM certificate in it")
            continue
        out[host] = SiteCert(value, sha256_of(cert))
    return out


def _view(target: Target) -> ClusterView | None:
    try:
        return target.client.view(with_last=False)
    except EtcdError:
        return None


def _hand_over(target: Target, host: str, done: set[str], log: Callable[[str], None]) -> str | None:
    """Move leadership of the cluster off `host` before its member restarts (to a renewed member when
    there is one); None when `host` does not lead it."""
    view = _view(target)
    if view is None or view.leader != host:
        return None
    indexes = {n: s.raft_index for n, s in view.statuses.items() if not status_errors(s)}
    heir = successor(indexes, host, done)
    leader, member = view.member(host), view.member(heir) if heir else None
    if leader is None or member is None:
        return None  # a cluster of one: its restart is its outage (refused by the inventory check)
    name = target.cluster.name
    log(f"{host}: handing leadership of etcd {name} to {heir}")
    try:
        target.client.gateway(leader.endpoint).move_leader(member.member_id)
    except EtcdError as err:
        raise RunFailed(f"etcd cluster {name}: moving leadership from {host} to {heir}: {err}",
                        f"nothing was renewed on {host}; `ufcctl etcd status --cluster {name}`") from err
    _wait(f"etcd cluster {name}: leadership off {host}",
          lambda: (v := _view(target)) is not None and v.leader not in (None, host))
    return f"{name}: {host} -> {heir}"


def _settle(target: Target, host: str) -> None:
    """Every member healthy and the restarted one caught up: its committed raft index at least the
    leader's as first seen from here after the host's run (a fixed target, however fast writers go;
    the node checked the same after each restart: `ufcctl-etcd-member --wait-settled`)."""
    goal: dict[str, int] = {}

    def ready() -> bool:
        view = _view(target)
        index = settled_leader_index(view, host) if view is not None else None
        if view is None or index is None:
            return False
        goal.setdefault("index", index)
        return view.statuses[host].raft_index >= goal["index"]

    _wait(f"etcd cluster {target.cluster.name}: every member healthy and {host} caught up", ready)


def _wait(what: str, ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while not ready():
        if time.monotonic() > deadline:
            raise RunFailed(f"{what}: not within {SETTLE_TIMEOUT:.0f} s",
                            "check `ufcctl etcd status`; run the command again once every member is healthy")
        time.sleep(POLL)
