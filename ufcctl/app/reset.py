"""`ufcctl reset`: a whole cluster taken down (playbooks/reset.yml), once the user named the inventory.

Every Kubernetes node is reset and every etcd member stopped with its data directory moved aside
(never deleted; the playbook says what stays). The run holds every host it contacts, so no rollout or
deploy runs on them meanwhile.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ufcctl.domain.inventory.model import CONTROL_PLANE, ETCD_GROUPS, KUBE_NODE, Inventory
from ufcctl.engine.locks import hold_nodes
from ufcctl.engine.run_events import RunObserver
from ufcctl.engine.run_result import RunResult
from ufcctl.engine.runner import RunOptions, new_run_id, run_playbook
from ufcctl.errors import InputError
from ufcctl.paths import playbook

PLAYBOOK = "reset.yml"
# Parallel hosts: a reset is seconds per node and nothing is paced, but each fork holds ~100 MB of
# controller memory (README: --forks), so 16,000 nodes take 320 rounds of 50, minutes in all.
MAX_FORKS = 50
RESET_GROUPS = (CONTROL_PLANE, KUBE_NODE, *ETCD_GROUPS)


def inventory_label(inventory_dir: Path) -> str:
    """What the user types to confirm: the inventory directory's name (`--inventory lab` -> lab)."""
    return Path(os.path.abspath(inventory_dir)).name


def check_confirmation(inventory_dir: Path, typed: str) -> None:
    name = inventory_label(inventory_dir)
    if typed.strip() != name:
        raise InputError(f"reset: {typed.strip()[:80]!r} is not the inventory's name {name!r}: nothing was "
                         "touched", f"type {name} exactly to reset every node of {inventory_dir} (scripts: "
                         f"--confirm {name})")


def reset_hosts(inventory: Inventory, inventory_dir: Path) -> list[str]:
    names = list(dict.fromkeys(h for g in RESET_GROUPS for h in inventory.group_hosts(g)))
    if not names:
        raise InputError(f"{inventory_dir}: no host in {', '.join(RESET_GROUPS)}: nothing to reset")
    return names


def reset_cluster(inventory: Inventory, hosts: list[str], *, check: bool,
                  observer: RunObserver | None = None) -> RunResult:
    """playbooks/reset.yml on `hosts` (check mode: nothing changes); one stamp for every moved etcd
    directory."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    options = RunOptions(forks=min(len(hosts), MAX_FORKS), check=check, extravars={"ufc_reset_stamp": stamp})
    run_id = new_run_id("reset")
    with hold_nodes(run_id, hosts):  # a rollout or deploy on any of them is refused meanwhile
        return run_playbook(playbook(PLAYBOOK), inventory.subset(hosts), options, run_id=run_id,
                            observer=observer)
