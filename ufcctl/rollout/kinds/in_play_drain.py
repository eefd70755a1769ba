"""What the kinds that drain inside each node's play share (remove-nodes, upgrade-cluster, remove-nodes
--control-plane): kubectl runs on the first control plane, so a run needs one, the drain's timeout is a
kind option, and the plan says where the drain happens."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ufcctl.domain.inventory.model import CONTROL_PLANE, Inventory
from ufcctl.errors import InputError
from ufcctl.rollout.kind import NodeGuard, RolloutRequest


def drain_timeout(options: Mapping[str, Any], default: int) -> int:
    """The kind's `drain_timeout` option (seconds kubectl drain may wait for one node's pods)."""
    return int(options.get("drain_timeout", default))


def kubectl_host(request: RolloutRequest, inventory: Inventory, what: str, missing: str) -> str:
    """The first control plane, where kubectl runs `what` for every node (the prepare step's line);
    InputError saying `missing` (what cannot be done) without one."""
    control_planes = inventory.group_hosts(CONTROL_PLANE)
    if not control_planes:
        raise InputError(f"{request.inventory_dir}: group {CONTROL_PLANE} has no hosts: {missing}",
                         "list the cluster's control planes in the inventory")
    return f"kubectl ({what}) on {control_planes[0]}"


def drain_hooks(mode: str, unit: str = "node") -> Callable[[RolloutRequest], tuple[NodeGuard | None, str]]:
    """The kind's `hooks`: no engine-side guard (the drain runs in each `unit`'s play), and the line the
    plan prints, saying what the drain does (`mode`) or that check mode only reads."""

    def hooks(request: RolloutRequest) -> tuple[NodeGuard | None, str]:
        how = "read only (check mode)" if request.dry_run else mode
        return None, f"in each {unit}'s play: kubectl drain on the first control plane, {how}"

    return hooks
