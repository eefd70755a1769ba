"""Use case: deploy the stack (playbooks/deploy.yml) onto an inventory or a part of it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ufcctl.app.inventory import load_inventory
from ufcctl.domain.inventory.patterns import PatternError, select_hosts
from ufcctl.engine.runner import RunObserver, RunOptions, RunResult, run_playbook
from ufcctl.errors import InputError
from ufcctl.paths import playbook


def deploy(
    inventory_dir: Path,
    options: RunOptions,
    *,
    limit: str | None = None,
    playbook_name: str = "deploy.yml",
    observer: RunObserver | None = None,
) -> RunResult:
    """Validate the inventory (nothing is touched when it is bad), then run the playbook on the hosts.

    `--limit` is resolved here, so the generated inventory Ansible reads holds only those hosts.
    """
    inventory = load_inventory(inventory_dir)
    try:
        names = select_hosts(inventory, limit)
    except PatternError as err:
        raise InputError(f"--limit {limit!r}: {err}", "use host names, group names, globs, ! and &") from err
    if not names:
        raise InputError(f"--limit {limit!r} selects no host of {inventory_dir}")
    # Ansible only sees the generated per-run inventory, so the roles learn the inventory's name here
    # (k8s_manifests writes to .ufc/manifests/<name>/); an explicit -e value wins.
    extravars = {"ufc_inventory_name": inventory_dir.name, **options.extravars}
    options = dataclasses.replace(options, extravars=extravars)
    return run_playbook(playbook(playbook_name), inventory.subset(names), options, observer=observer)
