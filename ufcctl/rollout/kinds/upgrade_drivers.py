"""The upgrade-drivers kind: the NPU driver and firmware on group npu_node (playbooks/upgrade-drivers.yml).

What is particular to it: its playbook and marker task, the versions and installer timeout it
passes to roles/ascend_driver, and a per-node deadline derived from that timeout. Plan, run,
resume and the rest are the engine's (ufcctl/rollout/runs.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ufcctl.domain.inventory.model import NPU_NODE
from ufcctl.domain.rollout.order import LONGEST
from ufcctl.domain.rollout.summary import RolloutSummary
from ufcctl.rollout import runs
from ufcctl.rollout.executor import RolloutObserver, RunFn
from ufcctl.rollout.kind import DEFAULT_CHUNK, KINDS, RolloutKind, RolloutRequest
from ufcctl.rollout.runs import Loader, PlanReport
from ufcctl.rollout.store import StateStore

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


KIND = KINDS.register(RolloutKind(
    name="upgrade-drivers",
    playbook="upgrade-drivers.yml",
    marker_task=MARKER_TASK,
    group=NPU_NODE,
    options=("version", "firmware_version", "node_timeout"),
    extravars=_extravars,
    node_deadline=_deadline,
))


@dataclass(frozen=True)
class UpgradeRequest:
    """The `upgrade-drivers` command's flags."""

    inventory_dir: Path
    batch: int
    window: int = 1
    max_fail: float = 0.0
    canary: int = 0
    align: str = "none"
    version: str | None = None  # ascend_driver_version (else the inventory's)
    firmware_version: str | None = None  # ascend_driver_firmware_version (else the inventory's)
    limit: str | None = None  # Ansible pattern inside npu_node
    dry_run: bool = False  # Ansible check mode: report what would change, install nothing
    force: bool = False  # drain nodes even when NPU pods run on them (only with a kubeconfig)
    node_timeout: int = DEFAULT_NODE_TIMEOUT
    forks: int | None = None  # per Ansible process; default: the window's capacity plus a few
    accelerate: str | None = None
    order: str = LONGEST
    chunk_size: int = DEFAULT_CHUNK

    def rollout(self) -> RolloutRequest:
        return RolloutRequest(
            inventory_dir=self.inventory_dir, batch=self.batch, window=self.window, max_fail=self.max_fail,
            canary=self.canary, align=self.align, limit=self.limit, dry_run=self.dry_run, force=self.force,
            forks=self.forks, accelerate=self.accelerate, order=self.order, chunk_size=self.chunk_size,
            options={"version": self.version, "firmware_version": self.firmware_version,
                     "node_timeout": self.node_timeout},
        )


def plan_upgrade(request: UpgradeRequest, store: StateStore, *, node_seconds: float | None = None,
                 loader: Loader | None = None) -> PlanReport:
    return runs.plan(KIND, request.rollout(), store, node_seconds=node_seconds, loader=loader)


def upgrade(request: UpgradeRequest, store: StateStore, *, run_fn: RunFn | None = None,
            observer: RolloutObserver | None = None, loader: Loader | None = None,
            retry_failed: bool = False) -> RolloutSummary:
    """A new rollout over npu_node (or, with retry_failed, over the newest run's failed nodes)."""
    return runs.start(KIND, request.rollout(), store, run_fn=run_fn, observer=observer, loader=loader,
                      retry_failed=retry_failed)
