"""The dataset layout on the export: which directories exist, with which mode and owner, parents first."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

_MODE = re.compile(r"^0?[0-7]{3,4}$")
PARENT_MODE = "0755"  # an implicit parent only has to be traversable and listable


@dataclass(frozen=True)
class LayoutDir:
    path: str  # absolute, on the server
    mode: str  # octal string, e.g. "0755"
    owner: str
    group: str


def layout_problems(entries: Sequence[Mapping[str, Any]], what: str = "nfs_server_layout") -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"{what}[{index}]"
        if not isinstance(entry, Mapping) or "path" not in entry:
            problems.append(f"{where} must be a mapping with at least `path` (relative to the export)")
            continue
        unknown = sorted(set(entry) - {"path", "mode", "owner", "group"})
        if unknown:
            problems.append(f"{where}: unknown keys {unknown} (allowed: path, mode, owner, group)")
        path = str(entry["path"])
        parts = PurePosixPath(path).parts
        if not path or path.startswith("/") or any(p in ("..", ".") for p in path.split("/")) or "//" in path:
            problems.append(f"{where}: path {path!r} must be relative to the export, without . .. or //")
            continue
        key = "/".join(parts)
        if key in seen:
            problems.append(f"{where}: path {path!r} listed twice")
        seen.add(key)
        mode = entry.get("mode")
        if mode is not None and not (isinstance(mode, str) and _MODE.match(mode)):
            problems.append(f"{where}: mode {mode!r} must be a quoted octal string such as \"0755\"")
    return problems


def plan_layout(root: str, entries: Sequence[Mapping[str, Any]], owner: str, group: str,
                mode: str = PARENT_MODE) -> tuple[LayoutDir, ...]:
    """Every directory to create under `root`, parents before children, implicit parents added."""
    wanted: dict[str, LayoutDir] = {}
    for entry in entries:
        rel = PurePosixPath(str(entry["path"]))
        wanted[rel.as_posix()] = LayoutDir(
            path=str(PurePosixPath(root) / rel),
            mode=_four(str(entry.get("mode", mode))),
            owner=str(entry.get("owner", owner)),
            group=str(entry.get("group", group)),
        )
    for key_of_child in list(wanted):
        for parent in PurePosixPath(key_of_child).parents:
            key = parent.as_posix()
            if key != "." and key not in wanted:
                wanted[key] = LayoutDir(str(PurePosixPath(root) / parent), _four(mode), owner, group)
    return tuple(sorted(wanted.values(), key=lambda d: (d.path.count("/"), d.path)))


def _four(mode: str) -> str:
    return mode if len(mode) == 4 else f"0{mode}"
