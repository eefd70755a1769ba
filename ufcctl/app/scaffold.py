"""Use case `ufcctl init NAME`: a new inventory under ./inventories/ from the sample ufcctl ships."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from ufcctl.errors import InputError
from ufcctl.paths import SAMPLE_INVENTORY, inventories_dir

# A directory name that works in `--inventory NAME` (no separators, not hidden, not `.`/`..`).
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def scaffold_inventory(name: str, source: Path = SAMPLE_INVENTORY) -> Path:
    """Copy the sample to ./inventories/NAME; refuses a bad name or an existing path (touches nothing)."""
    if not _NAME.match(name) or len(name) > 63:  # 63: names.MAX_NAME, the limit of the inventory name
        raise InputError(
            f"inventory name {name!r} is not a plain directory name",
            "use letters, digits, '.', '_' and '-', starting with a letter or digit, at most 63 (e.g. prod)",
        )
    if not (source / "hosts.yml").is_file():
        raise InputError(f"the sample inventory is missing ({source})", "reinstall ufcctl")
    target = inventories_dir() / name
    if target.exists() or target.is_symlink():
        raise InputError(
            f"{target} already exists; `ufcctl init` never overwrites an inventory",
            f"pick another name, or check it with `ufcctl inventory check --inventory {name}`",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    # README.md stays: it documents every variable of the sample the new inventory starts from.
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target
