"""The npu-check kind: `ufcctl npu check` checks every NPU node's chips and fabric, changing nothing.

Each node of group npu_node runs roles/ascend_driver tasks/check.yml (playbooks/npu-check.yml): one module
run reads npu-smi's chip health and, where the host has a fabric plan, every chip through hccn_tool
(tier 1: link UP, net health Success, device IP and LLDP neighbour as planned); with `--deep`, tier 2:
each chip pings chip i of every other node under the same ToR. What is particular to this kind: the
ToR's device IPs by chip, computed once per run from the whole inventory's fabric plans
(ufcctl/domain/npu/fabric_check.py) and passed as one extra var; the node's report line, which the run
keeps as its reason (rollout/chunks.py NODE_REPORT); and no drain, no kubectl. Window, budget,
canary, alignment, state, resume and `--retry-failed` are the engine's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ufcctl.domain.inventory.model import NPU_NODE, Inventory
from ufcctl.domain.npu.fabric_check import tor_addresses
from ufcctl.domain.npu.fabric_plan import FabricPlanError, host_plan
from ufcctl.errors import InputError
from ufcctl.rollout.kind import NodeGuard, RolloutKind, RolloutRequest

# The last task of roles/ascend_driver tasks/check.yml: its ok event means the node passed.
MARKER_TASK = "Report the node done to the rollout engine"
# Seconds one node may take: tier 1 is a few dozen hccn_tool calls; tier 2 pings every ToR peer (a ToR
# of 32 servers: 8 chips x 31 pings of a few seconds each on real hardware).
DEFAULT_NODE_TIMEOUT = 1800
TORS_VAR = "ufc_npu_fabric_tors"
DEFAULT_PING_COUNT = 3
CHECK_HINT = "`ufcctl inventory check` lists every problem"


def _extravars(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"ascend_driver_check_deep": bool(options.get("deep")),
            "ascend_driver_check_ping_count": int(options.get("ping_count", DEFAULT_PING_COUNT)),
            "ascend_driver_check_max_loss": float(options.get("max_loss", 0.0))}


def _deadline(options: Mapping[str, Any]) -> float:
    return float(options.get("node_timeout", DEFAULT_NODE_TIMEOUT))


def _read_only(request: RolloutRequest) -> tuple[NodeGuard | None, str]:
    return None, "none (a read-only check)"


def fabric_tors(inventory: Inventory) -> dict[str, Any]:
    """Every ToR's device IPs by chip, from the fabric plan of each npu_node host (once per run)."""
    pairs = []
    for host in inventory.subset(inventory.group_hosts(NPU_NODE)):
        try:
            pairs.append((host.vars.get("npu_tor_id"), host_plan(host.name, host.vars)))
        except FabricPlanError as err:
            raise InputError(f"{inventory.path}: {err}", CHECK_HINT) from None
    return {TORS_VAR: tor_addresses(pairs)}


KIND = RolloutKind(
    name="npu-check",
    playbook="npu-check.yml",
    marker_task=MARKER_TASK,
    group=NPU_NODE,
    options=("deep", "ping_count", "max_loss", "node_timeout"),
    extravars=_extravars,
    node_deadline=_deadline,
    hooks=_read_only,
    inventory_extravars=fabric_tors,
)


def check_options(*, deep: bool = False, ping_count: int = DEFAULT_PING_COUNT, max_loss: float = 0.0,
                  node_timeout: int = DEFAULT_NODE_TIMEOUT) -> dict[str, Any]:
    """This kind's own settings (RolloutRequest.options)."""
    return {"deep": deep, "ping_count": ping_count, "max_loss": max_loss, "node_timeout": node_timeout}
