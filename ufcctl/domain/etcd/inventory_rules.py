"""The etcd clusters' rules about the inventory (`ufcctl inventory check`, ufcctl/domain/inventory_check.py):
each cluster's size, each member's ports, each member's data directories.

They live with etcd's other rules, over the inventory's model: the inventory package never imports etcd
(tests/unit/test_import_graph.py, no two-way tie between domain packages).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ufcctl.domain.etcd.topology import CLUSTER_KINDS
from ufcctl.domain.inventory.config_values import path_problem
from ufcctl.domain.inventory.model import CONTROL_PLANE, ETCD_GROUPS, Inventory
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.inventory.validate import group_file, truthy, whole_number
from ufcctl.domain.inventory.values import templated
from ufcctl.errors import shown

# Default (client, peer) port of each etcd cluster, from the one table of etcd ports
# (domain/etcd/topology.py CLUSTER_KINDS); overridable per group or host with
# `<cluster>_client_port` / `<cluster>_peer_port`.
ETCD_DEFAULT_PORTS = {k.group: (k.client_port, k.peer_port) for k in CLUSTER_KINDS}
ALLOW_SINGLE_ETCD = "ufc_allow_single_etcd"


def etcd_port_var(cluster: str, kind: str) -> str:
    """`etcd_core_client_port`, `etcd_pods_peer_port`, ... (kind is "client" or "peer")."""
    return f"{cluster}_{kind}_port"


def check_etcd_sizes(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    for cluster in ETCD_GROUPS:
        members = inv.group_hosts(cluster)
        where, subject = group_file(inv, cluster), f"group {cluster}"
        if not members:
            problems.append(
                Problem(
                    where,
                    subject,
                    "has no hosts: ufcctl runs three etcd clusters (core, events, pods)",
                    "give it 3 or 5 hosts; they may be the "
                    f"control-plane hosts (`{cluster}: {{children: {{{CONTROL_PLANE}: }}}}`)",
                )
            )
        elif len(members) % 2 == 0:
            problems.append(
                Problem(
                    where,
                    subject,
                    f"has {len(members)} members; etcd needs an odd count to keep a majority",
                    "use 3 or 5 members",
                )
            )
        elif len(members) == 1:
            allowed = truthy(inv.hosts[members[0]].vars.get(ALLOW_SINGLE_ETCD))
            target = warnings if allowed else problems
            fix = (
                "fine for a lab only"
                if allowed
                else f"use 3 or 5 members (or set {ALLOW_SINGLE_ETCD}: true for a lab)"
            )
            target.append(Problem(where, subject, "has a single member: no quorum survives its loss", fix))


def _port(value: Any) -> int | None:
    number = whole_number(value)
    return number if number is not None and 0 < number < 65536 else None


def check_etcd_ports(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    clusters_of: dict[str, list[str]] = defaultdict(list)
    for cluster in ETCD_GROUPS:
        for host in inv.group_hosts(cluster):
            clusters_of[host].append(cluster)
    for host, clusters in clusters_of.items():
        hvars = inv.hosts[host].vars
        taken: dict[int, str] = {}
        for cluster in clusters:
            for kind, default in zip(("client", "peer"), ETCD_DEFAULT_PORTS[cluster], strict=True):
                var = etcd_port_var(cluster, kind)
                raw = hvars.get(var, default)
                port = _port(raw)
                where = inv.var_origin(host, var) if var in hvars else group_file(inv, cluster)
                if port is None:
                    problems.append(
                        Problem(
                            where,
                            f"host {host}",
                            f"{var} {shown(raw)} is not a port number",
                            "use a whole number from 1 to 65535",
                        )
                    )
                    continue
                if port in taken:
                    problems.append(
                        Problem(
                            where,
                            f"host {host}",
                            f"{var} {port} is also {taken[port]} on this host",
                            f"give one of them another port ({var}: ...)",
                        )
                    )
                else:
                    taken[port] = var


def check_etcd_data_dirs(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """Two etcd clusters on one host never share a data directory, nor nest one inside the other."""
    for name, host in inv.hosts.items():
        dirs: dict[str, str] = {}
        for kind in CLUSTER_KINDS:
            if kind.group not in host.groups:
                continue
            var = f"{kind.group}_data_dir"
            value = host.vars.get(var, f"/var/lib/etcd-{kind.name}")
            if isinstance(value, str) and not templated(value) and path_problem(value) is None:
                dirs[var] = value.rstrip("/") or "/"
        for var, path in dirs.items():
            for other, other_path in dirs.items():
                if other <= var:
                    continue
                if path == other_path or (path + "/").startswith(other_path + "/") or \
                        (other_path + "/").startswith(path + "/"):
                    problems.append(Problem(inv.var_origin(name, var), f"host {name}",
                                            f"{var} {shown(path)} and {other} {shown(other_path)} are one "
                                            "directory or one inside the other: two etcd clusters would "
                                            "share their data", "give each cluster its own directory, e.g. "
                                            "/var/lib/etcd-core and /var/lib/etcd-events"))
