"""Cluster rules a resolved inventory must meet before any host is touched (`ufcctl inventory check`,
which runs them with the rules of the modules beside this one and of the etcd and images packages:
ufcctl/domain/inventory_check.py), and the report they make.

Every rule returns all of its problems; problems that differ only in the host are folded into
one line naming the hosts in range notation, so a group var missing on 16,000 hosts is one line.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.inventory.model import (
    CONTROL_PLANE,
    KUBE_NODE,
    NPU_NODE,
    Inventory,
)
from ufcctl.domain.inventory.ranges import compact_host_names
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.npu import fabric_plan
from ufcctl.domain.placement.profiles import ACCELERATOR_TYPES
from ufcctl.errors import cut, shown

# npu_accelerator_type must be one of ACCELERATOR_TYPES, the hardware profile registry's types
# (imported above): a type the inventory accepts is one the placement rules and the driver health
# gate (roles/ascend_driver) know.

MAX_HOSTS_NAMED = 12  # in one folded line
MAX_DIGITS = 18  # a whole number in a var: far past any port or id, far below int()'s limit


@dataclass(frozen=True)
class ValidationReport:
    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


Rule = Callable[[Inventory, list[Problem], list[Problem]], None]


def run_rules(inv: Inventory, rules: Iterable[Rule]) -> ValidationReport:
    """Check every one of `rules`, in order; nothing is contacted and nothing stops at the first problem."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    for rule in rules:
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


def group_file(inv: Inventory, group: str) -> str:
    """The file that defines `group` (else the inventory's main file): where a problem of the group points."""
    return inv.groups[group].source if group in inv.groups else _main_file(inv)


def truthy(value: Any) -> bool:
    # What Ansible's `bool` filter accepts as true.
    if isinstance(value, str):
        return value.strip().lower() in ("yes", "on", "1", "true", "y", "t")
    return value is True or value == 1


def whole_number(value: Any) -> int | None:
    """A whole number >= 0 written as a number or as digits in a string, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        text = value.strip().lstrip("0") or "0"
        # Python's int() refuses 4,301 digits and more; no port or id is that long.
        return int(text) if len(text) <= MAX_DIGITS else None
    return value if isinstance(value, int) and value >= 0 else None


def check_control_plane(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    if not inv.group_hosts(CONTROL_PLANE):
        problems.append(
            Problem(
                group_file(inv, CONTROL_PLANE),
                f"group {CONTROL_PLANE}",
                "has no hosts",
                "list the control-plane hosts (3 for high availability) under it",
            )
        )


def check_vip(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    control = inv.group_hosts(CONTROL_PLANE)
    values = {name: inv.hosts[name].vars.get("ufc_vip") for name in control}
    unset = [name for name, value in values.items() if value in (None, "")]
    if len(control) > 1 and unset:
        problems.append(
            Problem(
                group_file(inv, CONTROL_PLANE),
                f"group {CONTROL_PLANE}",
                f"has {len(control)} hosts but ufc_vip is not set on {', '.join(compact_host_names(unset))}",
                "set ufc_vip (a free address on the control-plane network) in group_vars/all",
            )
        )
    distinct = sorted({str(v) for v in values.values() if v not in (None, "")})
    if len(distinct) > 1:
        problems.append(
            Problem(
                group_file(inv, CONTROL_PLANE),
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
                group_file(inv, NPU_NODE),
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
            if value is not None and whole_number(value) is None:
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
            if exc.var != fabric_plan.PORT_FORMAT_VAR:  # config_values.py names a bad format, plan or not
                problems.append(Problem(inv.var_origin(name, exc.var), f"host {name}", exc.message, fix))
    for clash in fabric_plan.clashes(plans):
        problems.append(Problem(inv.var_origin(clash.host, fabric_plan.SUBNET_VAR), f"host {clash.host}",
                                str(clash), "give each ToR its own subnet and each server its own "
                                f"{fabric_plan.SLOT_VAR} under its ToR; {fix}"))
    if plans and without:
        names = compact_host_names(without)
        listed = ", ".join(names[:MAX_HOSTS_NAMED]) + (" ..." if len(names) > MAX_HOSTS_NAMED else "")
        warnings.append(Problem(
            group_file(inv, NPU_NODE), f"group {NPU_NODE}",
            f"{len(without)} NPU nodes have no fabric plan ({listed}): ufcctl does not set or check their "
            "device IPs", f"set {fabric_plan.SUBNET_VAR} on their ToR groups ({fix})"))
