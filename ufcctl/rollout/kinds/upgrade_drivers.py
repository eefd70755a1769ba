"""The upgrade-drivers kind: the NPU driver and firmware on group npu_node (playbooks/upgrade-drivers.yml).

What is particular to it: its playbook and marker task, the versions and installer timeout it
passes to roles/ascend_driver, and a per-node deadline derived from that timeout. Plan, run,
resume and the rest are the engine's (ufcctl/rollout/runs.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ufcctl.domain.inventory.model import CONTROL_PLANE, NPU_NODE, Host
from ufcctl.domain.npu.driver_labels import target_labels
from ufcctl.rollout import drain
from ufcctl.rollout.kind import NodeGuard, RolloutKind, RolloutRequest

# The last task of roles/ascend_driver: its ok/changed event means the node is done.
MARKER_TASK = "Report the node done to the rollout engine"
DEFAULT_NODE_TIMEOUT = 1800  # seconds one installer may run before the node is failed as hung


def _extravars(options: Mapping[str, Any]) -> dict[str, Any]:
    extravars: dict[str, Any] = {
        "ascend_driver_install_timeout": options.get("node_timeout", DEFAULT_NODE_TIMEOUT)}
    if options.get("version"):
        extravars["ascend_driver_version"] = options["version"]
    if options.get("firmware_version"):
        extravars["ascend_driver_firmware_version"] = options["firmware_version"]
    return extravars


def _deadline(options: Mapping[str, Any]) -> float:
    """A safety net only: the role fails a hung installer itself after node_timeout; this covers
    the rest of the node's work (download, firmware and driver in turn, the health gate)."""
    return float(2 * int(options.get("node_timeout", DEFAULT_NODE_TIMEOUT)) + 900)


def _hooks(request: RolloutRequest) -> tuple[NodeGuard | None, str]:
    """Cordon + drain before a node's upgrade, uncordon after it succeeded; but a node whose Node labels
    (written by roles/ascend_driver at admission) already say this rollout's driver and firmware is not
    drained at all: its play ends after one module run, or drains in the play if the node is not at
    target after all (docs/architecture.md decision 18)."""
    options = request.options

    def targets(host: Host) -> dict[str, str]:
        return target_labels(host.vars, options)

    return drain.drain_guard(force=request.force, dry_run=request.dry_run, targets=targets)


KIND = RolloutKind(
    name="upgrade-drivers",
    playbook="upgrade-drivers.yml",
    marker_task=MARKER_TASK,
    group=NPU_NODE,
    options=("version", "firmware_version", "node_timeout"),
    extravars=_extravars,
    node_deadline=_deadline,
    hooks=_hooks,  # cordon + drain before a node's upgrade unless its labels say at target
    # the control planes beside each chunk (never run on): an upgraded node's NPU health taint is
    # removed through kubectl on the first one (roles/ascend_driver/tasks/admit.yml)
    context_groups=(CONTROL_PLANE,),
)



def upgrade_options(*, version: str | None = None, firmware_version: str | None = None,
                    node_timeout: int = DEFAULT_NODE_TIMEOUT) -> dict[str, Any]:
    """This kind's own settings (RolloutRequest.options). version and firmware_version default to the
    inventory's ascend_driver_version / ascend_driver_firmware_version."""
    return {"version": version, "firmware_version": firmware_version, "node_timeout": node_timeout}
