"""Cluster rules a resolved inventory must meet before any host is touched (`ufcctl inventory check`).

Every rule returns all of its problems; problems that differ only in the host are folded into
one line naming the hosts in range notation, so a group var missing on 16,000 hosts is one line.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.etcd.topology import CLUSTER_KINDS
from ufcctl.domain.images import mirrors
from ufcctl.domain.inventory.addresses import RULES as ADDRESS_RULES
from ufcctl.domain.inventory.arch import RULES as ARCH_RULES
from ufcctl.domain.inventory.bgp_peers import RULES as BGP_RULES
from ufcctl.domain.inventory.config_values import RULES as VALUE_RULES
from ufcctl.domain.inventory.connection import RULES as CONNECTION_RULES
from ufcctl.domain.inventory.contradictions import RULES as CONTRADICTION_RULES
from ufcctl.domain.inventory.image_registries import RULES as IMAGE_REGISTRY_RULES
from ufcctl.domain.inventory.model import (
    CONTROL_PLANE,
    ETCD_GROUPS,
    KUBE_NODE,
    NPU_NODE,
    REGISTRY_CACHE,
    Inventory,
)
from ufcctl.domain.inventory.names import check_path_names
from ufcctl.domain.inventory.ranges import compact_host_names
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.npu import fabric_plan
from ufcctl.domain.placement.profiles import ACCELERATOR_TYPES
from ufcctl.errors import cut, shown

# npu_accelerator_type must be one of ACCELERATOR_TYPES, the hardware profile registry's types
# (imported above): a type the inventory accepts is one the placement rules and the driver health
# gate (roles/ascend_driver) know.

# Default (client, peer) port of each etcd cluster, from the one table of etcd ports
# (domain/etcd/topology.py CLUSTER_KINDS); overridable per group or host with
# `<cluster>_client_port` / `<cluster>_peer_port`.
ETCD_DEFAULT_PORTS = {k.group: (k.client_port, k.peer_port) for k in CLUSTER_KINDS}
ALLOW_SINGLE_ETCD = "ufc_allow_single_etcd"
MAX_HOSTS_NAMED = 12  # in one folded line
MAX_DIGITS = 18  # a whole number in a var: far past any port or id, far below int()'s limit


def etcd_port_var(cluster: str, kind: str) -> str:
    """`etcd_core_client_port`, `etcd_pods_peer_port`, ... (kind is "client" or "peer")."""
    return f"{cluster}_{kind}_port"


@dataclass(frozen=True)
class ValidationReport:
    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def validate(inv: Inventory, deploy: bool = False) -> ValidationReport:
    """Check every rule (with `deploy`, DEPLOY_RULES too); nothing is contacted and nothing stops at the
    first problem."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    for rule in RULES + (DEPLOY_RULES if deploy else ()):
        rule(inv, problems, warnings)
    return ValidationReport(tuple(fold(problems)), tuple(fold(warnings)))


def fold(problems: Iterable[Problem]) -> list[Problem]:
    """Merge problems that differ only in the host into one line per (file, message, fix)."""
    merged: dict[tuple[str, str, str], list[str]] = {}
    order: list[Problem | tuple[str, str, str]] = []
    for p in problems:
        if not p.subject.startswith("host "):
            order.append(p)
            continue
        key = (p.file, p.message, p.fix)
        if key not in merged:
            merged[key] = []
            order.append(key)
        merged[key].append(p.subject[len("host ") :])
    out = []
    for item in order:
        if isinstance(item, Problem):
            out.append(item)
            continue
        names = compact_host_names(merged[item])
        shown = ", ".join(names[:MAX_HOSTS_NAMED]) + (
            f" and {len(names) - MAX_HOSTS_NAMED} more" if len(names) > MAX_HOSTS_NAMED else ""
        )
        subject = f"host {shown}" if len(merged[item]) == 1 else f"hosts {shown}"
        out.append(Problem(item[0], subject, item[1], item[2]))
    return out


def _main_file(inv: Inventory) -> str:
    return inv.groups["all"].source if "all" in inv.groups else inv.path


def _group_file(inv: Inventory, group: str) -> str:
    return inv.groups[group].source if group in inv.groups else _main_file(inv)


def _truthy(value: Any) -> bool:
    # What Ansible's `bool` filter accepts as true.
    if isinstance(value, str):
        return value.strip().lower() in ("yes", "on", "1", "true", "y", "t")
    return value is True or value == 1


def check_control_plane(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    if not inv.group_hosts(CONTROL_PLANE):
        problems.append(
            Problem(
                _group_file(inv, CONTROL_PLANE),
                f"group {CONTROL_PLANE}",
                "has no hosts",
                "list the control-plane hosts (3 for high availability) under it",
            )
        )


def check_etcd_sizes(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    for cluster in ETCD_GROUPS:
        members = inv.group_hosts(cluster)
        where, subject = _group_file(inv, cluster), f"group {cluster}"
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
            allowed = _truthy(inv.hosts[members[0]].vars.get(ALLOW_SINGLE_ETCD))
            target = warnings if allowed else problems
            fix = (
                "fine for a lab only"
                if allowed
                else f"use 3 or 5 members (or set {ALLOW_SINGLE_ETCD}: true for a lab)"
            )
            target.append(Problem(where, subject, "has a single member: no quorum survives its loss", fix))


def _whole(value: Any) -> int | None:
    """A whole number >= 0 written as a number or as digits in a string, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        text = value.strip().lstrip("0") or "0"
        # Python's int() refuses 4,301 digits and more; no port or id is that long.
        return int(text) if len(text) <= MAX_DIGITS else None
    return value if isinstance(value, int) and value >= 0 else None


def _port(value: Any) -> int | None:
    number = _whole(value)
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
                where = inv.var_origin(host, var) if var in hvars else _group_file(inv, cluster)
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


def check_vip(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    control = inv.group_hosts(CONTROL_PLANE)
    values = {name: inv.hosts[name].vars.get("ufc_vip") for name in control}
    unset = [name for name, value in values.items() if value in (None, "")]
    if len(control) > 1 and unset:
        problems.append(
            Problem(
                _group_file(inv, CONTROL_PLANE),
                f"group {CONTROL_PLANE}",
                f"has {len(control)} hosts but ufc_vip is not set on {', '.join(compact_host_names(unset))}",
                "set ufc_vip (a free address on the control-plane network) in group_vars/all",
            )
        )
    distinct = sorted({str(v) for v in values.values() if v not in (None, "")})
    if len(distinct) > 1:
        problems.append(
            Problem(
                _group_file(inv, CONTROL_PLANE),
                f"group {CONTROL_PLANE}",
                f"its hosts disagree on ufc_vip ({', '.join(cut(v) for v in distinct)})",
                "set ufc_vip once, in group_vars/all",
            )
        )
    addresses = {host.address: name for name, host in reversed(inv.hosts.items())}
    for vip in distinct:
        holder = next(name for name, v in values.items() if str(v) == vip)
        where = inv.var_origin(holder, "ufc_vip")
        try:
            ipaddress.ip_address(vip)
        except ValueError:
            problems.append(
                Problem(
                    where,
                    "ufc_vip",
                    f"{shown(vip)} is not an IP address",
                    "use an IPv4 or IPv6 address, e.g. 10.0.0.10",
                )
            )
        if vip in addresses:
            problems.append(
                Problem(
                    where,
                    "ufc_vip",
                    f"{cut(vip)} is the address of host {addresses[vip]}",
                    "the VIP must be an unused address that keepalived moves between hosts",
                )
            )


def check_npu_nodes(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    npu = inv.group_hosts(NPU_NODE)
    outside = [h for h in npu if KUBE_NODE not in inv.hosts[h].groups]
    if outside:
        problems.append(
            Problem(
                _group_file(inv, NPU_NODE),
                f"group {NPU_NODE}",
                f"{len(outside)} of its hosts are not in {KUBE_NODE} "
                f"({', '.join(compact_host_names(outside)[:MAX_HOSTS_NAMED])})",
                f"make {NPU_NODE} a child of {KUBE_NODE} (`{KUBE_NODE}: {{children: {{{NPU_NODE}: }}}}`)",
            )
        )
    for name in npu:
        if inv.hosts[name].vars.get("npu_accelerator_type") in (None, ""):
            problems.append(
                Problem(
                    inv.hosts[name].source,
                    f"host {name}",
                    "npu_accelerator_type is not set",
                    "set it on the host's hardware group: one of " + ", ".join(ACCELERATOR_TYPES),
                )
            )


def check_topology_values(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    for name, host in inv.hosts.items():
        hvars = host.vars
        kind = hvars.get("npu_accelerator_type")
        if kind not in (None, "") and kind not in ACCELERATOR_TYPES:
            problems.append(
                Problem(
                    inv.var_origin(name, "npu_accelerator_type"),
                    f"host {name}",
                    f"npu_accelerator_type {shown(kind)} is not a known type",
                    "use one of " + ", ".join(ACCELERATOR_TYPES),
                )
            )
        for var in ("npu_super_pod_id", "npu_slice_id"):
            value = hvars.get(var)
            if value is not None and _whole(value) is None:
                problems.append(
                    Problem(
                        inv.var_origin(name, var),
                        f"host {name}",
                        f"{var} {shown(value)} is not a whole number >= 0",
                        f"set {var} to 0, 1, 2, ...",
                    )
                )
        for var in ("npu_tor_id", "rack"):
            value = hvars.get(var)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
                problems.append(
                    Problem(
                        inv.var_origin(name, var),
                        f"host {name}",
                        f"{var} must be a name or number, not {type(value).__name__}",
                        f"set {var} to the switch or rack id, e.g. tor-01",
                    )
                )


def check_registry_caches(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """Cache specs, upstreams and scheme (ufcctl/domain/images/mirrors.py), before the role or any
    node's mirror list meets them."""
    hosts = inv.group_hosts(REGISTRY_CACHE)
    if not hosts:
        return
    fix = "see roles/registry_cache/README.md (variables and tiers)"
    _, found = mirrors.parse_caches({REGISTRY_CACHE: hosts}, {h: inv.hosts[h].vars for h in hosts})
    for text in found:  # "host NAME: what"
        subject, _, message = text.partition(": ")
        host = subject[len("host "):]
        problems.append(Problem(inv.var_origin(host, "registry_cache_tier"), subject, message, fix))
    first = inv.hosts[hosts[0]].vars
    upstreams, found = mirrors.parse_upstreams(first.get("registry_cache_upstreams"))
    if not upstreams and not found:
        found = ["registry_cache_upstreams is not set: list at least one {name, registry, url, port}"]
    found += mirrors.scheme_problems(first.get("registry_cache_scheme", "https"),
                                     _truthy(first.get("registry_cache_insecure")))
    for text in found:
        problems.append(Problem(_group_file(inv, REGISTRY_CACHE), f"group {REGISTRY_CACHE}", text, fix))


def check_npu_fabric(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """Each NPU node's device IPs and switch ports (domain/npu/fabric_plan.py): a valid plan per host,
    no address or port used twice, no chip on a gateway. A plan on some NPU nodes only is a warning."""
    fix = "see inventories/sample/README.md (NPU fabric)"
    plans: list[tuple[str, list[fabric_plan.ChipPlan]]] = []
    without = []
    for name in inv.group_hosts(NPU_NODE):
        hvars = inv.hosts[name].vars
        if not fabric_plan.has_plan(hvars):
            without.append(name)
            continue
        try:
            plans.append((name, fabric_plan.host_plan(name, hvars)))
        except fabric_plan.FabricPlanError as exc:
            problems.append(Problem(inv.var_origin(name, exc.var), f"host {name}", exc.message, fix))
    for clash in fabric_plan.clashes(plans):
        problems.append(Problem(inv.var_origin(clash.host, fabric_plan.SUBNET_VAR), f"host {clash.host}",
                                str(clash), "give each ToR its own subnet and each server its own "
                                f"{fabric_plan.SLOT_VAR} under its ToR; {fix}"))
    if plans and without:
        names = compact_host_names(without)
        listed = ", ".join(names[:MAX_HOSTS_NAMED]) + (" ..." if len(names) > MAX_HOSTS_NAMED else "")
        warnings.append(Problem(
            _group_file(inv, NPU_NODE), f"group {NPU_NODE}",
            f"{len(without)} NPU nodes have no fabric plan ({listed}): ufcctl does not set or check their "
            "device IPs", f"set {fabric_plan.SUBNET_VAR} on their ToR groups ({fix})"))


Rule = Callable[[Inventory, list[Problem], list[Problem]], None]
RULES: tuple[Rule, ...] = (
    check_control_plane,
    check_etcd_sizes,
    check_etcd_ports,
    check_vip,
    check_npu_nodes,
    check_topology_values,
    check_npu_fabric,
    check_registry_caches,
    check_path_names,
)
# Hosts that are one machine (addresses.py), connection variables and controller-side lookups
# (connection.py).
RULES += ADDRESS_RULES + CONNECTION_RULES
# Values that land in config files and kubelet flags, each checked as what it is (config_values.py).
RULES += VALUE_RULES + CONTRADICTION_RULES
# ufc_arch and the role variables that name an architecture agree (arch.py; issue 44, D12).
RULES += ARCH_RULES
# The site's mirror of each upstream registry, and the single prefix it replaced (image_registries.py).
RULES += IMAGE_REGISTRY_RULES
# Rules of what a deploy builds, checked by `ufcctl inventory check` and before a deploy, not by every
# command that reads the inventory (a day-2 command on a running cluster does not build its network):
# Calico's BGP peers in tor mode, a ToR peer per npu_tor_id and an extra peer per other node (bgp_peers.py).
DEPLOY_RULES: tuple[Rule, ...] = BGP_RULES
