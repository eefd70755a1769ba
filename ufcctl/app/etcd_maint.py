"""Use cases `ufcctl etcd status|defrag|prune`: the controller talks to the members with ufcctl's client cert.

The controller reaches the members' client URLs directly (as kube-apiserver does); the
certificate is the one roles/etcd issued into the controller PKI directory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ufcctl.app.inventory import load_inventory
from ufcctl.domain.etcd.defrag import ClusterView, health_problems, status_errors
from ufcctl.domain.etcd.defrag_result import RunReport
from ufcctl.domain.etcd.settings import SettingsError, defrag_config
from ufcctl.domain.etcd.snapshot import Assembled, EndpointProbe, assemble
from ufcctl.domain.etcd.status import ClusterStatus, MemberRow, PruneResult
from ufcctl.domain.etcd.topology import EtcdCluster, etcd_clusters
from ufcctl.domain.inventory.model import Inventory
from ufcctl.engine import etcd_targets
from ufcctl.engine.etcd_client import ClusterClient, EtcdError
from ufcctl.engine.etcd_probe import probe_all
from ufcctl.engine.etcd_targets import Target, client_tls
from ufcctl.errors import InputError, RunFailed
from ufcctl.nodeside.etcd_defrag import DefragRun
from ufcctl.nodeside.etcd_defrag_config import AgentConfig

# Seconds each member has to answer `ufcctl etcd status` (all of its calls together). A healthy
# member answers in milliseconds; 5 s is generous for a loaded one, and a dead network costs
# about 5 s in total because every member is asked at once.
STATUS_TIMEOUT = 5.0


def cluster_targets(inventory_dir: Path, only: str | None,
                    inventory: Inventory | None = None) -> list[Target]:
    """Each etcd cluster of the inventory (or only `only`): engine/etcd_targets.py. `inventory`: the one at
    `inventory_dir`, when the caller loaded it already (validating 16,000 hosts again is seconds of work)."""
    return etcd_targets.cluster_targets(inventory_dir, only, inventory or load_inventory(inventory_dir))


def _unreachable_row(member: str, endpoint: str, error: str) -> MemberRow:
    return MemberRow(member, endpoint, f"unreachable: {error}", False, None, None, None, (), None)


def _status_of(name: str, view: ClusterView) -> MemberRow:
    member = view.member(name)
    endpoint = member.endpoint if member else ""
    alarms = tuple(sorted(a.alarm for a in view.alarms if member and a.member_id == member.member_id))
    status = view.statuses.get(name)
    if status is None:
        health = f"unreachable: {view.unreachable.get(name, 'no status')}"
        return MemberRow(name, endpoint, health, False, None, None, None, alarms, view.last.get(name))
    errors = status_errors(status)
    return MemberRow(
        name,
        endpoint,
        "healthy" if not errors else "; ".join(errors),
        status.is_leader,
        status.db_size,
        status.db_size_in_use,
        round(status.fragmentation_percent, 1),
        alarms,
        view.last.get(name),
        status.version,
        status.revision,
    )


class StatusObserver(Protocol):
    """Told when the status queries start and as each endpoint answers, fails or runs out of time."""

    def started(self, endpoints: int, timeout: float) -> None: ...

    def answered(self, cluster: str, endpoint: str, error: str | None, seconds: float) -> None: ...


def etcd_status(
    inventory_dir: Path,
    cluster: str | None = None,
    timeout: float = STATUS_TIMEOUT,
    observer: StatusObserver | None = None,
    inventory: Inventory | None = None,
) -> list[ClusterStatus]:
    """Health, leader, sizes, fragmentation, alarms and last defrag of every member of every cluster.

    Every member is asked at once, each within `timeout` seconds, so the answer takes about
    `timeout` however many members are down (members added since the inventory was written are
    asked in a second round, once some member has listed them).
    """
    targets = cluster_targets(inventory_dir, cluster, inventory)

    def answered(probe: EndpointProbe) -> None:
        if observer:
            error = probe.error if probe.status is None else None
            observer.answered(probe.cluster, probe.endpoint, error, probe.seconds)

    def ask(asked: list[tuple[str, str]]) -> dict[tuple[str, str], EndpointProbe]:
        if observer:
            observer.started(len(asked), timeout)
        return probe_all(asked, targets[0].client.tls, timeout, answered)

    probes = ask([(t.cluster.name, url) for t in targets for url in t.cluster.client_urls])
    names = [t.cluster.name for t in targets]
    assembled = {name: assemble(name, _probes_of(name, probes)) for name in names}
    later = [(name, url) for name, a in assembled.items() for url in a.unprobed]
    if later:
        probes.update(ask(later))
        for name in {n for n, _ in later}:
            assembled[name] = assemble(name, _probes_of(name, probes))
    return [_cluster_status(t.cluster, assembled[t.cluster.name]) for t in targets]


def _probes_of(cluster: str, probes: dict[tuple[str, str], EndpointProbe]) -> list[EndpointProbe]:
    """The cluster's probes in the order asked (configured endpoints first: their member list wins)."""
    return [p for (name, _), p in probes.items() if name == cluster]


def _cluster_status(cluster: EtcdCluster, assembled: Assembled) -> ClusterStatus:
    view = assembled.view
    if view is None:
        errors = {m.host: assembled.errors.get(m.client_url, "no answer") for m in cluster.members}
        rows = tuple(_unreachable_row(m.host, m.client_url, errors[m.host]) for m in cluster.members)
        summary = "; ".join(f"{host}: {error}" for host, error in errors.items())
        return ClusterStatus(cluster.name, False, (f"no member answered: {summary}",), None, (), rows)
    problems = tuple(health_problems(view))
    if not assembled.alarms_read:
        problems += ("no member returned the alarm list",)
    rows = tuple(_status_of(m.name or m.member_id, view) for m in view.members)
    return ClusterStatus(cluster.name, not problems, problems, view.leader, view.alarm_names, rows)


def etcd_defrag(
    inventory_dir: Path,
    cluster: str | None = None,
    dry_run: bool = False,
    log: Callable[[str], None] = print,
) -> list[RunReport]:
    """The agents' procedure run from the controller on whole clusters: followers, then the leader."""
    reports = []
    for target in cluster_targets(inventory_dir, cluster):
        try:
            config = defrag_config(target.hostvars, target.cluster.name)
        except SettingsError as err:
            raise InputError(str(err), "fix the variable in the inventory") from err
        agent = AgentConfig(
            cluster=target.cluster.name,
            endpoints=target.cluster.client_urls,
            tls=target.client.tls,
            settings=config.settings,
            member=None,
            by="ufcctl",
            dry_run=dry_run,
            lock_ttl_seconds=config.lock_ttl_seconds,
            leader_wait_seconds=config.leader_wait_seconds,
        )
        try:
            reports.append(DefragRun(agent, target.client, log).run())
        except EtcdError as err:
            raise RunFailed(
                f"etcd cluster {target.cluster.name}: {err}", "check `ufcctl etcd status`"
            ) from err
    return reports


def etcd_prune(inventory_dir: Path, cluster: str, yes: bool = False) -> PruneResult:
    """Count (and with `yes` delete) keys left in core for resources the overrides route elsewhere."""
    if cluster != "core":
        raise InputError(
            f"--cluster {cluster}: prune applies to core only",
            "orphaned keys stay in core after events, leases or pods move to their own cluster",
        )
    inventory = load_inventory(inventory_dir)
    clusters = {c.name: c for c in etcd_clusters(inventory)}
    if "core" not in clusters:
        raise InputError(f"inventory {inventory_dir}: group etcd_core has no hosts")
    prefixes = [
        p for name in ("events", "pods") if name in clusters for p in clusters[name].kind.registry_prefixes
    ]
    if not prefixes:
        raise InputError(
            "nothing to prune: no events or pods cluster, so core still serves every resource",
            "prune only after etcd_events / etcd_pods have hosts and kube-apiserver uses the overrides",
        )
    client = ClusterClient("core", clusters["core"].client_urls, client_tls(inventory, clusters["core"]))
    try:
        counts = {p: client.first("count_prefix", p) for p in prefixes}
        deleted = {p: client.first("delete_prefix", p) for p in prefixes if counts[p]} if yes else {}
    except EtcdError as err:
        raise RunFailed(f"etcd cluster core: {err}", "check `ufcctl etcd status --cluster core`") from err
    return PruneResult("core", counts, deleted)
