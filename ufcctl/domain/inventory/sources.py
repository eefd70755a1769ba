"""What an inventory directory holds once read from disk: parsed files, each with the name it came from.

The engine (ufcctl/engine/inventory_files.py) fills these; the domain resolves them without I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ufcctl.errors import cut_quoted


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an inventory, printed as `FILE: SUBJECT: what is wrong — how to fix`."""

    file: str  # path relative to the inventory directory (or the directory itself)
    subject: str  # "host npu001", "group etcd_core", "" for the file as a whole
    message: str
    fix: str = ""

    def __str__(self) -> str:
        where = f"{self.file}: {self.subject}: " if self.subject else f"{self.file}: "
        return cut_quoted(f"{where}{self.message}" + (f" — {self.fix}" if self.fix else ""))


@dataclass(frozen=True)
class SourceFile:
    """One parsed YAML/JSON file: `data` is what the YAML loader returned (None for an empty file)."""

    path: str  # relative to the inventory directory, e.g. "hosts.yml", "group_vars/all/etcd.yml"
    data: Any


@dataclass(frozen=True)
class VarsEntry:
    """One entry of group_vars/ or host_vars/: a file (`all.yml`, `all`) or a directory of files (`all/`).

    `files` are in the order Ansible loads them (a directory: sorted, recursively; hidden and
    backup files skipped), empty files included (they add nothing).
    """

    name: str  # the directory entry's name, e.g. "all.yml" or "all"
    is_dir: bool
    files: tuple[SourceFile, ...]


@dataclass(frozen=True)
class InventorySources:
    """Everything read from an inventory directory, before resolution."""

    root: str  # the inventory directory
    inventory_files: tuple[SourceFile, ...]  # hosts.yml and other inventory files, in Ansible's order
    group_vars: Mapping[str, VarsEntry] = field(default_factory=dict)  # by entry name
    host_vars: Mapping[str, VarsEntry] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()  # files that could not be read or parsed
    warnings: tuple[Problem, ...] = ()  # files ignored on purpose (empty inventory file, ...)


# The suffixes Ansible tries, in order, after the bare name (ansible-core's YAML_FILENAME_EXTENSIONS):
# the first entry that exists wins, so `group_vars/all/` hides `group_vars/all.yml`.
VARS_SUFFIXES = ("", ".yml", ".yaml", ".json")


def vars_entry_for(entries: Mapping[str, VarsEntry], name: str) -> VarsEntry | None:
    """The group_vars/host_vars entry Ansible reads for a group or host, if any."""
    if not name or name[0] == "/":  # Ansible skips names that look like absolute paths
        return None
    for suffix in VARS_SUFFIXES:
        entry = entries.get(name + suffix)
        if entry is not None:
            return entry
    return None
