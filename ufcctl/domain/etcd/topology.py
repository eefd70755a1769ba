"""The three etcd clusters from the inventory, and the kube-apiserver flags that route resources to them.

Cluster `core` holds everything not routed elsewhere; `events` holds core events and
coordination.k8s.io leases (the two heaviest write streams at thousands of nodes); `pods`
holds pods (docs/reference/components.md §2). A cluster whose group is empty is not used and its
resources stay in core.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.inventory.model import ETCD_GROUPS, Inventory
from ufcctl.domain.inventory.values import literal


@dataclass(frozen=True)
class ClusterKind:
    name: str
    group: str
    client_port: int
    peer_port: int
    metrics_port: int
    # kube-apiserver `group/resource` keys routed to this cluster; the core API group is "".
    resources: tuple[str, ...]
    # Where kube-apiserver keeps those resources (under its default --etcd-prefix /registry):
    # what stays orphaned in core when the resources move here (`ufcctl etcd prune`).
    registry_prefixes: tuple[str, ...] = ()


# Ports: core 2379/2380 and events 2383/2382 as Kubespray uses (docs/reference/kubespray.md §3);
# pods take the next pair. Metrics ports: 2381 is kubeadm's and Kubespray's etcd metrics port; events
# and pods take 2386/2387, free of every client/peer port above (Kubespray #8230 was a metrics port
# clash between two clusters on one host).
CLUSTER_KINDS: tuple[ClusterKind, ...] = (
    ClusterKind("core", ETCD_GROUPS[0], 2379, 2380, 2381, ()),
    ClusterKind(
        "events",
        ETCD_GROUPS[1],
        2383,
        2382,
        2386,
        ("/events", "coordination.k8s.io/leases"),
        ("/registry/events/", "/registry/leases/"),
    ),
    ClusterKind("pods", ETCD_GROUPS[2], 2385, 2384, 2387, ("/pods",), ("/registry/pods/",)),
)
KINDS_BY_NAME = {k.name: k for k in CLUSTER_KINDS}


@dataclass(frozen=True)
class EtcdMember:
    host: str  # inventory hostname, also the member name
    address: str
    client_port: int
    peer_port: int
    metrics_port: int = 0

    @property
    def client_url(self) -> str:
        return f"https://{_host_part(self.address)}:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"https://{_host_part(self.address)}:{self.peer_port}"


@dataclass(frozen=True)
class EtcdCluster:
    kind: ClusterKind
    members: tuple[EtcdMember, ...]

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def client_urls(self) -> tuple[str, ...]:
        return tuple(m.client_url for m in self.members)


def _host_part(address: str) -> str:
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def member_address(hostvars: Mapping[str, Any], host: str) -> str:
    """`etcd_address`, else `ansible_host`, else the inventory name (the role uses the same order)."""
    for key in ("etcd_address", "ansible_host"):
        value = literal(hostvars.get(key))
        if value:
            return str(value)
    return host


def port_var(cluster: str, kind: str) -> str:
    """Inventory variable overriding a port, e.g. etcd_events_client_port."""
    return f"etcd_{cluster}_{kind}_port"


def clusters_from_groups(
    groups: Mapping[str, Sequence[str]], hostvars: Mapping[str, Mapping[str, Any]]
) -> tuple[EtcdCluster, ...]:
    """The clusters that have members, from group -> hosts and host -> vars (Ansible's own shapes)."""
    clusters = []
    for kind in CLUSTER_KINDS:
        members = []
        for host in groups.get(kind.group, ()):
            hv = hostvars.get(host, {})
            client = literal(hv.get(port_var(kind.name, "client"))) or kind.client_port
            peer = literal(hv.get(port_var(kind.name, "peer"))) or kind.peer_port
            metrics = literal(hv.get(port_var(kind.name, "metrics"))) or kind.metrics_port
            members.append(EtcdMember(host, member_address(hv, host), int(client), int(peer), int(metrics)))
        if members:
            clusters.append(EtcdCluster(kind, tuple(members)))
    return tuple(clusters)


def etcd_clusters(inventory: Inventory) -> tuple[EtcdCluster, ...]:
    groups = {kind.group: inventory.group_hosts(kind.group) for kind in CLUSTER_KINDS}
    hostvars = {name: host.vars for name, host in inventory.hosts.items()}
    return clusters_from_groups(groups, hostvars)


@dataclass(frozen=True)
class ApiserverEtcdFlags:
    servers: str  # --etcd-servers: comma-separated
    overrides: str  # --etcd-servers-overrides: comma between overrides, semicolon between servers

    def as_args(self) -> list[str]:
        args = [f"--etcd-servers={self.servers}"]
        if self.overrides:
            args.append(f"--etcd-servers-overrides={self.overrides}")
        return args


class WiringError(ValueError):
    """The inventory cannot produce valid kube-apiserver etcd flags."""


def apiserver_etcd_flags(clusters: Sequence[EtcdCluster]) -> ApiserverEtcdFlags:
    by_name = {c.name: c for c in clusters}
    core = by_name.get("core")
    if core is None:
        raise WiringError("group etcd_core has no hosts: kube-apiserver needs the core etcd cluster")
    overrides = [
        f"{resource}#{';'.join(cluster.client_urls)}"
        for cluster in clusters
        if cluster.name != "core"
        for resource in cluster.kind.resources
    ]
    flags = ApiserverEtcdFlags(",".join(core.client_urls), ",".join(overrides))
    parse_overrides(flags.overrides)  # what kube-apiserver would reject must fail here first
    return flags


def parse_overrides(value: str) -> dict[str, tuple[str, ...]]:
    """Parse --etcd-servers-overrides the way kube-apiserver validates it (options/etcd.go Validate).

    Each comma-separated override must split once on '#' and its left side once on '/'.
    """
    result: dict[str, tuple[str, ...]] = {}
    for override in filter(None, value.split(",")):
        tokens = override.split("#")
        if len(tokens) != 2 or len(tokens[0].split("/")) != 2 or not tokens[1]:
            raise WiringError(f"override {override!r} must be of format: group/resource#servers")
        servers = tuple(tokens[1].split(";"))
        if not all(s.startswith(("http://", "https://")) for s in servers):
            raise WiringError(f"override {override!r}: every server must be an http(s) URL")
        result[tokens[0]] = servers
    return result


def port_conflicts(clusters: Sequence[EtcdCluster]) -> list[str]:
    """Ports claimed twice on one host by clusters sharing it (each problem names host, port, users)."""
    claims: dict[tuple[str, int], list[str]] = {}
    for cluster in clusters:
        for m in cluster.members:
            for what, port in (("client", m.client_port), ("peer", m.peer_port), ("metrics", m.metrics_port)):
                claims.setdefault((m.host, port), []).append(f"{cluster.name} {what}")
    return [
        f"host {host}: port {port} used by {' and '.join(users)}"
        for (host, port), users in claims.items()
        if len(users) > 1
    ]


def cluster_facts(clusters: Sequence[EtcdCluster]) -> list[dict[str, Any]]:
    """The clusters as plain data for Ansible templates (roles/etcd/filter_plugins)."""
    return [
        {
            "name": c.name,
            "group": c.kind.group,
            "client_urls": list(c.client_urls),
            "initial_cluster": ",".join(f"{m.host}={m.peer_url}" for m in c.members),
            "members": [
                {
                    "host": m.host,
                    "address": m.address,
                    "client_port": m.client_port,
                    "peer_port": m.peer_port,
                    "metrics_port": m.metrics_port,
                    "client_url": m.client_url,
                    "peer_url": m.peer_url,
                }
                for m in c.members
            ],
        }
        for c in clusters
    ]


def size_problems(clusters: Sequence[EtcdCluster], allow_single: bool = False) -> list[str]:
    """Member counts etcd cannot run well: even counts (no more fault tolerance than one fewer) and,
    unless allowed (labs), single members (no quorum after any failure)."""
    problems = []
    for cluster in clusters:
        count = len(cluster.members)
        if count == 1 and not allow_single:
            problems.append(
                f"group {cluster.kind.group} has a single member: use 3 or 5, or set "
                "ufc_allow_single_etcd: true (labs only)"
            )
        elif count > 1 and count % 2 == 0:
            problems.append(
                f"group {cluster.kind.group} has {count} members: use an odd number (3 or 5); "
                f"{count} tolerate no more failures than {count - 1}"
            )
    return problems


def inventory_problems(clusters: Sequence[EtcdCluster], allow_single: bool = False) -> list[str]:
    return size_problems(clusters, allow_single) + port_conflicts(clusters)
