"""Failure domains of the fleet: hosts per group, accelerator type, ToR switch, super pod, rack and slice."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ufcctl.domain.inventory.model import NPU_NODE, Inventory

# Summary key -> the host var it counts (inventories/sample/README.md, "Topology").
TOPOLOGY_VARS: Mapping[str, str] = {
    "accelerator_types": "npu_accelerator_type",
    "tors": "npu_tor_id",
    "super_pods": "npu_super_pod_id",
    "racks": "rack",
    "slices": "npu_slice_id",
}


@dataclass(frozen=True)
class Topology:
    hosts: int
    npu_nodes: int
    groups: Mapping[str, int]  # hosts per group, descendants included, in inventory order
    domains: Mapping[str, Mapping[str, int]]  # "tors" -> {"tor-01": 16, ...}; keys of TOPOLOGY_VARS
    npu_nodes_without: Mapping[str, int]  # "tors" -> NPU nodes that have no npu_tor_id, ...


def failure_domains(inv: Inventory, var: str, hosts: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Hosts grouped by the value of `var` (e.g. npu_tor_id), in inventory order; hosts without it left out.

    Values are compared as strings, so `npu_super_pod_id: 3` and `"3"` are one domain.
    """
    domains: dict[str, list[str]] = {}
    for name in inv.hosts if hosts is None else hosts:
        value = inv.hosts[name].vars.get(var)
        if value is not None and value != "":
            domains.setdefault(str(value), []).append(name)
    return domains


def count_topology(inv: Inventory) -> Topology:
    """Counts for `ufcctl inventory show`: per group and per failure domain."""
    groups = {name: len(inv.group_hosts(name)) for name in inv.groups}
    npu = inv.group_hosts(NPU_NODE)
    domains = {}
    without = {}
    for key, var in TOPOLOGY_VARS.items():
        found = failure_domains(inv, var)
        domains[key] = {value: len(members) for value, members in found.items()}
        npu_with = {h for members in found.values() for h in members}
        without[key] = sum(1 for h in npu if h not in npu_with)
    return Topology(
        hosts=len(inv.hosts), npu_nodes=len(npu), groups=groups, domains=domains, npu_nodes_without=without
    )
