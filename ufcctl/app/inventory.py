"""Use cases: load an inventory directory (read, resolve as Ansible does, validate) and summarise it."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from ufcctl.app.gcpause import cyclic_gc_paused
from ufcctl.domain.inventory.model import Inventory
from ufcctl.domain.inventory.patterns import PatternError, select_hosts
from ufcctl.domain.inventory.ranges import compact_host_names
from ufcctl.domain.inventory.resolve import resolve
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.inventory.summary import GroupSummary, InventorySummary
from ufcctl.domain.inventory.topology import count_topology
from ufcctl.domain.inventory_check import validate
from ufcctl.engine.inventory_files import read_inventory_dir
from ufcctl.errors import InputError, shown


@dataclass(frozen=True)
class CheckResult:
    path: str  # the inventory directory as shown to the user
    inventory: Inventory | None  # None when a file could not be parsed
    problems: tuple[Problem, ...]  # file names prefixed with `path`
    warnings: tuple[Problem, ...]

    @property
    def valid(self) -> bool:
        return not self.problems

    def error(self) -> InputError:
        count = len(self.problems)
        return InputError(
            f"inventory {self.path}: {count} problem{'s' if count != 1 else ''}",
            "nothing was contacted; fix the lines above and rerun `ufcctl inventory check`",
            details=[str(p) for p in self.problems],
        )


def _shown(path: Path) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if relative.startswith("..") else relative


def _locate(problems: list[Problem], root: str, shown: str) -> tuple[Problem, ...]:
    # Problems name files relative to the inventory directory; show them as the user can open them.
    return tuple(replace(p, file=shown if p.file == root else f"{shown}/{p.file}") for p in problems)


def check_inventory(path: Path, deploy: bool = False) -> CheckResult:
    """Read, resolve and validate (`deploy`: the rules of what a deploy builds too); every problem is
    collected, nothing is raised for a bad inventory."""
    with cyclic_gc_paused():
        return _check(Path(path), deploy)


def _check(path: Path, deploy: bool = False) -> CheckResult:
    shown = _shown(path)
    sources = read_inventory_dir(path)
    resolution = resolve(sources)
    problems, warnings = list(resolution.problems), list(resolution.warnings)
    inventory: Inventory | None = resolution.inventory
    if sources.problems:
        # A file that does not parse would make every cluster rule report ghosts (no control
        # plane, no etcd...), and host_vars/ of the hosts it defines look unused: report the
        # unreadable files alone.
        inventory = None
        warnings = list(sources.warnings)
    else:
        report = validate(resolution.inventory, deploy=deploy)
        problems += report.problems
        warnings += report.warnings
    root = str(Path(path))
    return CheckResult(shown, inventory, _locate(problems, root, shown), _locate(warnings, root, shown))


def load_inventory(path: Path, deploy: bool = False) -> Inventory:
    """The resolved, valid inventory, or InputError (exit 2) listing every problem (`deploy`: see
    check_inventory)."""
    result = check_inventory(path, deploy)
    if not result.valid or result.inventory is None:
        raise result.error()
    return result.inventory


def select_limit(inventory: Inventory, inventory_dir: Path, limit: str | None) -> list[str]:
    """The hosts `--limit` selects (every host without it), or InputError naming the pattern."""
    try:
        names = select_hosts(inventory, limit)
    except PatternError as err:
        raise InputError(f"--limit {shown(limit)}: {err}",
                         "use host names, group names, globs, ! and &") from err
    if not names:
        raise InputError(f"--limit {shown(limit)} selects no host of {inventory_dir}")
    return names


def summarize(inv: Inventory) -> InventorySummary:
    """What `ufcctl inventory show` prints: hosts per group and the failure-domain counts."""
    topology = count_topology(inv)
    groups = tuple(
        GroupSummary(name, topology.groups[name], tuple(compact_host_names(group.hosts)), group.children)
        for name, group in inv.groups.items()
        if name != "all" and (name != "ungrouped" or group.hosts)
    )
    return InventorySummary(_shown(Path(inv.path)), len(inv.hosts), groups, topology)
