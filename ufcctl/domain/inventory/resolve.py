"""Build the Inventory from parsed files exactly as ansible-core's YAML plugin and vars precedence do.

Structure (ansible-core 2.19 `plugins/inventory/yaml.py`, `inventory/data.py`): top-level keys
are groups; a group holds `vars`, `children`, `hosts` (a string is shorthand for a one-key
mapping); files are walked depth first in key order, which fixes the order of hosts and groups.
Afterwards every group without a parent becomes a child of `all`, and a host that is in no group
but `all` lands in `ungrouped`.

Vars, lowest to highest (the default `VARIABLE_PRECEDENCE` with `hash_behaviour=replace`, so a
key is replaced whole, dicts included):
  `all` vars in inventory files < the host's other groups' inventory-file vars
  < group_vars/all < group_vars/<group> < the host's inventory-file vars < host_vars/<host>.
Groups are ordered by (depth, ansible_group_priority, name); depth is the longest path from `all`.
The walk of the files into groups and hosts is structure.py's; the vars and the order are here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.domain.inventory.sources import (
    VARS_SUFFIXES,
    InventorySources,
    Problem,
    SourceFile,
    VarsEntry,
    vars_entry_for,
)
from ufcctl.domain.inventory.structure import GroupDraft, Structure, kind_of


@dataclass(frozen=True)
class Resolution:
    inventory: Inventory
    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...]


def _depths(groups: Mapping[str, GroupDraft]) -> dict[str, int]:
    """Longest path from `all` to each group (what ansible-core's incremental `depth` ends up as)."""
    depth: dict[str, int] = {"all": 0}
    for name in groups:
        if name in depth:
            continue
        stack = [name]
        while stack:  # iterative DFS over parents; the structure is acyclic (add_child refuses loops)
            current = stack[-1]
            pending = [p for p in groups[current].parents if p not in depth]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            parents = groups[current].parents
            depth[current] = max((depth[p] + 1 for p in parents), default=0)
    return depth


def _merge_vars_files(
    entry: VarsEntry | None, problems: list[Problem]
) -> tuple[dict[str, Any], tuple[SourceFile, ...]]:
    if entry is None:
        return {}, ()
    merged: dict[str, Any] = {}
    for source in entry.files:
        if source.data is None:
            continue
        if not isinstance(source.data, Mapping):
            problems.append(
                Problem(
                    source.path,
                    "",
                    f"a vars file must be a mapping, not {kind_of(source.data)}",
                    "write `name: value` lines at the top level",
                )
            )
            continue
        merged.update(source.data)
    return merged, entry.files


def resolve(sources: InventorySources) -> Resolution:
    """The Inventory Ansible would build from these files, with every problem found on the way."""
    structure = Structure()
    for source in sources.inventory_files:
        if source.data is not None:
            structure.read_file(source)
    structure.reconcile()
    problems = list(sources.problems) + structure.problems
    default_source = sources.inventory_files[0].path if sources.inventory_files else sources.root

    depth = _depths(structure.groups)
    used_groups: set[str] = set()
    groups: dict[str, Group] = {}
    dir_vars: dict[str, dict[str, Any]] = {}
    for name, draft in structure.groups.items():
        entry = vars_entry_for(sources.group_vars, name)
        if entry is not None:
            used_groups.add(entry.name)
        dir_vars[name], files = _merge_vars_files(entry, problems)
        groups[name] = Group(
            name=name,
            children=tuple(draft.children),
            hosts=tuple(draft.hosts),
            vars={**draft.vars, **dir_vars[name]},
            source=draft.source or default_source,
            parents=tuple(draft.parents),
            depth=depth[name],
            priority=draft.priority,
            file_vars=draft.vars,
            vars_files=files,
        )
    hosts, used_hosts = _resolve_hosts(structure, groups, dir_vars, sources, problems)
    warnings = list(sources.warnings)
    warnings += _unused_entries("group_vars", sources.group_vars, used_groups, "group")
    warnings += _unused_entries("host_vars", sources.host_vars, used_hosts, "host")
    for name in sorted(set(groups) & set(hosts)):  # Ansible warns too; usually a host under `children:`
        warnings.append(
            Problem(
                groups[name].source,
                f"group {name}",
                "is also the name of a host",
                "rename one of them (a host listed under `children:` becomes a group)",
            )
        )
    return Resolution(
        Inventory(path=sources.root, hosts=hosts, groups=groups), tuple(problems), tuple(warnings)
    )


# Hosts written as one range share their direct groups: cache, per tuple of direct groups, the
# host's full group set and the var layers to merge. Boundedly: with per-ToR and per-slice groups
# nearly every host of a 16k-node inventory has its own tuple.
_LAYER_CACHE_LIMIT = 4096


def _resolve_hosts(
    structure: Structure,
    groups: Mapping[str, Group],
    dir_vars: Mapping[str, Mapping[str, Any]],
    sources: InventorySources,
    problems: list[Problem],
) -> tuple[dict[str, Host], set[str]]:
    lineage: dict[str, frozenset[str]] = {}  # group -> itself and its ancestors
    rank = {g.name: i for i, g in enumerate(sorted(groups.values(), key=lambda g: g.sort_key))}
    file_layer = {name: g.file_vars for name, g in groups.items() if g.file_vars}
    dir_layer = {name: v for name, v in dir_vars.items() if v}
    cache: dict[tuple[str, ...], tuple[frozenset[str], list[Mapping[str, Any]]]] = {}
    host_entries = sources.host_vars
    hosts: dict[str, Host] = {}
    used: set[str] = set()
    for name, draft in structure.hosts.items():
        direct = tuple(draft.groups)
        cached = cache.get(direct)
        if cached is None:
            lines = []
            for group in direct:
                line = lineage.get(group)
                if line is None:
                    line = lineage[group] = frozenset({group, *structure.ancestors(group)})
                lines.append(line)
            member = frozenset({"all"}).union(*lines)
            chain = sorted(member, key=rank.__getitem__)  # `all` ranks first (depth 0)
            layers = [file_layer[g] for g in chain if g in file_layer]
            layers += [dir_layer[g] for g in chain if g in dir_layer]
            if len(cache) >= _LAYER_CACHE_LIMIT:
                cache.clear()
            cached = cache[direct] = (member, layers)
        member, layers = cached
        merged: dict[str, Any] = {}
        for layer in layers:
            merged.update(layer)
        merged.update(draft.vars)
        files: tuple[SourceFile, ...] = ()
        if host_entries:
            entry = vars_entry_for(host_entries, name)
            if entry is not None:
                used.add(entry.name)
                file_vars, files = _merge_vars_files(entry, problems)
                merged.update(file_vars)
        hosts[name] = Host(
            name=name, vars=merged, groups=member, source=draft.source, file_vars=draft.vars, vars_files=files
        )
    return hosts, used


def _unused_entries(
    folder: str, entries: Mapping[str, VarsEntry], used: set[str], kind: str
) -> list[Problem]:
    """group_vars/host_vars entries Ansible never reads: a typo'd name, or hidden by a sibling entry."""
    warnings = []
    for entry_name, entry in entries.items():
        if entry_name in used:
            continue
        path = f"{folder}/{entry_name}" + ("/" if entry.is_dir else "")
        winner = next(
            (
                other
                for suffix in VARS_SUFFIXES[1:]
                if entry_name.endswith(suffix)
                and (other := vars_entry_for(entries, entry_name[: -len(suffix)])) is not None
                and other.name in used
            ),
            None,
        )
        if winner is not None:
            warnings.append(
                Problem(
                    path,
                    "",
                    f"ignored: Ansible reads {folder}/{winner.name} instead",
                    "merge the two into one file or directory",
                )
            )
        else:
            warnings.append(
                Problem(
                    path,
                    "",
                    f"no {kind} of that name in the inventory, so Ansible ignores it",
                    f"check the spelling against the {kind} names",
                )
            )
    return warnings
