"""The host's cgroup filesystem: the lab's own parent cgroup, its CPU weight, and its removal.

The root of the cgroup filesystem is a parameter (default /sys/fs/cgroup) so a test can point it at a
folder of its own. cgroup v2 is recognised by `cgroup.controllers` at the root; otherwise the v1
hierarchies are the folders below it (the cpu hierarchy may be `cpu,cpuacct` with `cpu` a symlink).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_MAX_SHARES = 262144  # the kernel's limit of cpu.shares
V2_MAX_WEIGHT = 10000  # the kernel's limit of cpu.weight


def is_v2(root: Path = CGROUP_ROOT) -> bool:
    return (root / "cgroup.controllers").is_file()


def _v1_cpu_hierarchy(root: Path) -> Path:
    cpu = root / "cpu"
    if cpu.is_dir():
        return cpu
    for entry in sorted(root.iterdir()) if root.is_dir() else ():
        if "cpu" in entry.name.split(",") and entry.is_dir():
            return entry
    raise FileNotFoundError(errno.ENOENT, "no cgroup v1 cpu hierarchy", str(root))


def set_cpu_weight(name: str, shares: int, weight: int, root: Path = CGROUP_ROOT) -> Path:
    """Create the cgroup `name` at the top of the CPU controller's hierarchy and give it `shares`
    (v1 `cpu.shares`) or `weight` (v2 `cpu.weight`), each capped at the kernel's maximum. Returns
    the folder; raises OSError when it cannot be made or written (a folder it made is removed)."""
    if is_v2(root):
        folder, control, value = root / name, "cpu.weight", min(weight, V2_MAX_WEIGHT)
    else:
        folder, control, value = _v1_cpu_hierarchy(root) / name, "cpu.shares", min(shares, V1_MAX_SHARES)
    made = not folder.is_dir()
    folder.mkdir(exist_ok=True)  # not parents: the hierarchy itself must be there
    try:
        (folder / control).write_text(f"{value}\n")
    except OSError:
        if made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    log.debug("cgroup %s: %s = %d", folder, control, value)
    return folder


def _hierarchies(root: Path) -> list[Path]:
    """Where a cgroup named at the top can be: v2 the one tree, v1 every mounted hierarchy (a symlink
    such as cpu -> cpu,cpuacct names a hierarchy already listed)."""
    if is_v2(root):
        return [root]
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())


def remove_group(name: str, root: Path = CGROUP_ROOT) -> list[Path]:
    """rmdir the cgroup `name` in every hierarchy that has it, the cgroups below it first (podman
    leaves `<parent>/conmon`). A cgroup already gone or still in use (ENOENT, EBUSY; ENOTEMPTY on a
    plain folder) is left with a debug line, any other refusal with a warning: never an error.
    Returns the folders removed."""
    removed: list[Path] = []
    for hierarchy in _hierarchies(root):
        top = hierarchy / name
        if not top.is_dir() or top.is_symlink():
            continue
        for folder, _dirs, _files in os.walk(top, topdown=False):
            try:
                os.rmdir(folder)
            except OSError as err:
                quiet = err.errno in (errno.ENOENT, errno.EBUSY, errno.ENOTEMPTY)
                log.log(logging.DEBUG if quiet else logging.WARNING, "cgroup %s left: %s", folder, err)
            else:
                removed.append(Path(folder))
    return removed
