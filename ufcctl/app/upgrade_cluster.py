"""Use case `ufcctl upgrade-cluster`: a Kubernetes upgrade, control planes first, then the workers.

In order, each step only after the one before succeeded:
1. the skew verdict (ufcctl/app/upgrade_plan.py): refused (InputError, nothing touched) when Kubernetes'
   version-skew policy refuses it, or when the inventory's ufc_kube_version is not the version asked for
   (a later `deploy` installs what the inventory says: an upgrade the inventory does not record would be
   undone by the next deploy);
2. a snapshot of every etcd cluster into the state directory (`ufcctl etcd backup`): the way back, since
   Kubernetes has no downgrade;
3. the control planes one at a time (playbooks/upgrade-cluster.yml): out of haproxy, kubeadm upgrade
   apply (the first) or node (the others), kubelet, back in once haproxy sees it UP;
4. the workers, on the fleet engine (the command starts the upgrade-cluster kind after this returns).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ufcctl.app.etcd_backup import etcd_backup
from ufcctl.app.etcd_member import require_success
from ufcctl.app.inventory import load_inventory
from ufcctl.app.upgrade_plan import CONTROL_PLANE, UpgradePlan, inventory_version, plan_upgrade_cluster
from ufcctl.domain.controlplane import skew
from ufcctl.domain.inventory.model import Inventory
from ufcctl.engine.locks import holding
from ufcctl.engine.runner import RunOptions, new_run_id, run_playbook
from ufcctl.errors import InputError
from ufcctl.paths import playbook

LB_GROUP = "apiserver_lb"


@dataclass(frozen=True)
class ControlPlanePhase:
    plan: UpgradePlan
    snapshots: tuple[str, ...]
    seconds: float  # the control-plane phase alone
    run_dir: str


def check_request(inventory_dir: Path, version: str) -> tuple[Inventory, UpgradePlan]:
    """The inventory and the plan, or InputError (exit 2, nothing touched) naming what to fix."""
    wanted = skew.parse(version)
    if wanted is None:
        raise InputError(f"--version {version!r}: not a Kubernetes version",
                         "use vMAJOR.MINOR.PATCH, e.g. v1.35.4")
    inventory = load_inventory(inventory_dir)
    recorded = inventory_version(inventory)
    if skew.parse(recorded) != wanted:
        raise InputError(
            f"--version {skew.text(wanted)}: the inventory {inventory_dir} says ufc_kube_version "
            f"{recorded!r}", f"set ufc_kube_version: \"{skew.text(wanted)[1:]}\" in the inventory's "
            "group_vars first (a later deploy installs what the inventory says), then run this again")
    report = plan_upgrade_cluster(inventory_dir, version, inventory)
    if not report.verdict.allowed:
        raise InputError(f"upgrade to {report.verdict.target} refused: {report.verdict.refusals[0]}",
                         details=list(report.verdict.refusals[1:]))
    return inventory, report


def upgrade_control_planes(inventory_dir: Path, inventory: Inventory, report: UpgradePlan,
                           log: Callable[[str], None] = print) -> ControlPlanePhase:
    """Steps 2 and 3: the snapshots, then the control planes one at a time (RunFailed on a failure). The
    control planes and haproxy hosts are locked first, for the whole phase (NodesBusy naming the run
    that holds one: nothing is snapshotted or touched)."""
    planes = inventory.group_hosts(CONTROL_PLANE)
    hosts = list(dict.fromkeys([*planes, *inventory.group_hosts(LB_GROUP)]))
    run_id = new_run_id("upgrade-cluster")
    with holding(run_id, hosts):
        log(f"snapshot of every etcd cluster before the upgrade to {report.verdict.target}")
        snapshots = tuple(s.path for s in etcd_backup(inventory_dir, log=log, inventory=inventory))
        log(f"control planes one at a time ({', '.join(planes)}), each out of haproxy while it restarts")
        started = time.monotonic()
        result = run_playbook(playbook("upgrade-cluster.yml"), inventory.subset(hosts),
                              RunOptions(forks=max(len(hosts), 1)), run_id=run_id)
        require_success(result, "the control-plane upgrade")
    seconds = time.monotonic() - started
    log(f"control planes on {report.verdict.target} in {seconds:.1f} s")
    return ControlPlanePhase(report, snapshots, seconds, str(result.run_dir))
