"""Contradictions in an inventory's topology that Ansible would settle silently by group order: a host in
two ToR (or super pod) groups with different ids gets whichever group sorts last, and a ToR whose hosts
name two super pods splits one switch between two caches, drains and placements. Refused, naming both."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from ufcctl.domain.inventory.model import Inventory
from ufcctl.domain.inventory.sources import Problem
from ufcctl.errors import shown


def _defining_groups(inv: Inventory, host: str, var: str) -> dict[str, Any]:
    """The host's groups that set `var` themselves, with their values."""
    return {g: inv.groups[g].vars[var] for g in sorted(inv.hosts[host].groups)
            if g in inv.groups and var in inv.groups[g].vars}


def check_topology_contradictions(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """A host in two ToR (or super pod) groups with different ids, and a ToR in two super pods: Ansible
    would keep whichever group sorts last; refused, naming both."""
    for name, host in inv.hosts.items():
        for var in ("npu_tor_id", "npu_super_pod_id"):
            if var in host.file_vars or any(isinstance(s.data, Mapping) and var in s.data
                                            for s in host.vars_files):
                continue  # set on the host itself: one value, whatever its groups say
            given = _defining_groups(inv, name, var)
            values = {str(v) for v in given.values()}
            if len(values) > 1:
                listed = ", ".join(f"{g} ({shown(v)})" for g, v in given.items())
                problems.append(Problem(inv.var_origin(name, var), f"host {name}",
                                        f"is in groups that set {var} differently: {listed}",
                                        f"put the host in one of them, or set {var} on the host"))
    pods_of: dict[str, dict[str, str]] = defaultdict(dict)  # tor -> super pod -> a host saying so
    for name, host in inv.hosts.items():
        tor, pod = host.vars.get("npu_tor_id"), host.vars.get("npu_super_pod_id")
        if tor is not None and pod is not None:
            pods_of[str(tor)].setdefault(str(pod), name)
    for tor, pods in pods_of.items():
        if len(pods) > 1:
            listed = ", ".join(f"{pod} (host {host})" for pod, host in sorted(pods.items()))
            first = next(iter(pods.values()))
            problems.append(Problem(inv.var_origin(first, "npu_super_pod_id"), f"npu_tor_id {shown(tor)}",
                                    f"is in more than one super pod: {listed}",
                                    "a ToR switch belongs to one super pod: fix npu_super_pod_id or "
                                    "npu_tor_id"))


RULES = (check_topology_contradictions,)
