"""Use case: deploy the stack (playbooks/deploy.yml) onto an inventory or a part of it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ufcctl.app.inventory import load_inventory
from ufcctl.domain.inventory.patterns import PatternError, select_hosts
from ufcctl.engine.locks import hold_nodes
from ufcctl.engine.playbook_tags import SPECIAL_TAGS, playbook_tags, unknown_tags
from ufcctl.engine.runner import RunObserver, RunOptions, RunResult, new_run_id, run_playbook
from ufcctl.errors import InputError
from ufcctl.paths import ROLES_DIR, playbook


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
    path = playbook(playbook_name)
    check_tags(path, options)
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
    run_id = new_run_id(path.stem)
    # the hosts this run contacts, held until it ends: a rollout or deploy on any of them is refused
    with hold_nodes(run_id, names):
        return run_playbook(path, inventory.subset(names), options, run_id=run_id, observer=observer)


def check_tags(path: Path, options: RunOptions) -> None:
    """--tags/--skip-tags must name tags the playbook or Ansible defines (a typo would select nothing)."""
    if not options.tags and not options.skip_tags:
        return
    known = playbook_tags(path, ROLES_DIR)
    for flag, requested in (("--tags", options.tags), ("--skip-tags", options.skip_tags)):
        unknown = unknown_tags(requested, known)
        if unknown:
            raise InputError(
                f"{flag} {', '.join(unknown)}: no play, role or task of {path.name} has "
                f"{'this tag' if len(unknown) == 1 else 'these tags'}",
                f"known tags: {', '.join(sorted(known))}; Ansible's own: {', '.join(sorted(SPECIAL_TAGS))}",
            )
