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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.domain.inventory.ranges import (
    MAX_HOSTS,
    HostCountError,
    HostPatternError,
    expand_host_pattern,
    split_port,
)
from ufcctl.domain.inventory.sources import (
    VARS_SUFFIXES,
    InventorySources,
    Problem,
    SourceFile,
    VarsEntry,
    vars_entry_for,
)

SECTIONS = ("vars", "children", "hosts")
HOST_CAP_FIX = (
    f"check the range bounds for a typo; one inventory holds at most {MAX_HOSTS:,} hosts (README \"Limits\")"
)


@dataclass(frozen=True)
class Resolution:
    inventory: Inventory
    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...]


class _GroupDraft:
    __slots__ = (
        "name",
        "source",
        "children",
        "child_set",
        "parents",
        "hosts",
        "host_set",
        "vars",
        "priority",
    )

    def __init__(self, name: str, source: str) -> None:
        self.name, self.source = name, source
        self.children: list[str] = []
        self.child_set: set[str] = set()  # 1,000 ToR groups under one parent: keep lookups O(1)
        self.parents: list[str] = []
        self.hosts: list[str] = []
        self.host_set: set[str] = set()
        self.vars: dict[str, Any] = {}
        self.priority = 1


class _HostDraft:
    __slots__ = ("name", "source", "vars", "groups")

    def __init__(self, name: str, source: str) -> None:
        self.name, self.source = name, source
        self.vars: dict[str, Any] = {}
        self.groups: list[str] = []  # direct groups, in the order the host was added to them


class _Structure:
    """Groups and hosts as the inventory files define them (mutable while files are walked)."""

    def __init__(self) -> None:
        self.groups: dict[str, _GroupDraft] = {}
        self.hosts: dict[str, _HostDraft] = {}
        self.problems: list[Problem] = []
        self.full = False  # MAX_HOSTS reached: further host entries are not read
        for name in ("all", "ungrouped"):
            self.groups[name] = _GroupDraft(name, "")
        self.add_child("all", "ungrouped", "")

    def problem(self, file: str, subject: str, message: str, fix: str = "") -> None:
        self.problems.append(Problem(file, subject, message, fix))

    def group(self, name: str, source: str) -> _GroupDraft:
        draft = self.groups.get(name)
        if draft is None:
            draft = self.groups[name] = _GroupDraft(name, source)
        elif not draft.source:
            draft.source = source
        return draft

    def ancestors(self, name: str) -> set[str]:
        seen: set[str] = set()
        todo = list(self.groups[name].parents)
        while todo:
            parent = todo.pop()
            if parent not in seen:
                seen.add(parent)
                todo.extend(self.groups[parent].parents)
        return seen

    def _closes_loop(self, parent: str, child: str) -> bool:
        """Would `child` under `parent` close a loop (is `parent` already below `child`)?

        Two searches in step, up from the parent and down from the child; the first to run out
        decides. Adding a group at either end of a long chain then costs a step or two, not the
        chain's length (10,000 chained groups read in about a second instead of a minute).
        """
        if child == parent:
            return True
        groups = self.groups
        up, down = [parent], [child]
        seen_up, seen_down = {parent}, {child}
        while up and down:
            for above in groups[up.pop()].parents:
                if above == child:
                    return True
                if above not in seen_up:
                    seen_up.add(above)
                    up.append(above)
            for below in groups[down.pop()].children:
                if below == parent:
                    return True
                if below not in seen_down:
                    seen_down.add(below)
                    down.append(below)
        return False

    def add_child(self, parent: str, child: str, source: str) -> None:
        pgroup, cgroup = self.groups[parent], self.groups[child]
        if child in pgroup.child_set:
            return
        if self._closes_loop(parent, child):
            self.problem(
                source,
                f"group {parent}",
                f"making {child!r} its child creates a loop of groups",
                "remove one of the `children` entries that close the loop",
            )
            return
        pgroup.children.append(child)
        pgroup.child_set.add(child)
        cgroup.parents.append(parent)

    def add_host(self, name: str, group: str, port: int | None, source: str) -> _HostDraft:
        host = self.hosts.get(name)
        if host is None:
            host = self.hosts[name] = _HostDraft(name, source)
            if port is not None:  # Ansible only takes the port when the host is first seen
                host.vars["ansible_port"] = port
        draft = self.groups[group]
        if name not in draft.host_set:
            draft.host_set.add(name)
            draft.hosts.append(name)
            host.groups.append(group)
        return host

    def add_hosts(
        self, names: list[str], group: str, port: int | None, source: str, host_vars: Mapping[str, Any] | None
    ) -> None:
        """add_host for every name of one expanded entry (the hot loop of a 16k-host range)."""
        hosts, draft = self.hosts, self.groups[group]
        members, member_list = draft.host_set, draft.hosts
        for name in names:
            host = hosts.get(name)
            if host is None:
                host = hosts[name] = _HostDraft(name, source)
                if port is not None:
                    host.vars["ansible_port"] = port
            if name not in members:
                members.add(name)
                member_list.append(name)
                host.groups.append(group)
            if host_vars:
                host.vars.update(host_vars)

    # -- walking one inventory file -------------------------------------------------------------

    def read_file(self, source: SourceFile) -> None:
        data = source.data
        if not isinstance(data, Mapping):
            self.problem(
                source.path,
                "",
                f"an inventory file must be a mapping of groups, not {_kind(data)}",
                "start the file with `all:` and put groups under `children:`",
            )
            return
        if "plugin" in data:
            self.problem(
                source.path,
                "",
                "inventory plugin configurations are not supported",
                "ufcctl reads static YAML inventories; export one with "
                "`ansible-inventory -i SOURCE --list --yaml`",
            )
            return
        for name, body in data.items():
            self.read_group(source.path, name, body)

    def read_group(self, path: str, name: Any, body: Any) -> str | None:
        if not isinstance(name, str) or not name:
            self.problem(path, f"group {name!r}", "a group name must be a non-empty string", "quote the name")
            return None
        if body is not None and not isinstance(body, Mapping):
            self.problem(
                path,
                f"group {name}",
                f"the group definition is {_kind(body)}, not a mapping",
                "write `vars:`, `children:` and `hosts:` under the group name",
            )
            return None
        self.group(name, path)
        if body is None:
            return name
        for key, value in body.items():
            if key not in SECTIONS:
                self.problem(
                    path,
                    f"group {name}",
                    f"unknown key {key!r}",
                    "a group may only hold `vars`, `children` and `hosts` (check the indentation)",
                )
                continue
            if isinstance(value, str):
                value = {value: None}
            if value is None:
                continue
            if not isinstance(value, Mapping):
                self.problem(
                    path,
                    f"group {name}",
                    f"`{key}` is {_kind(value)}, not a mapping",
                    f"write each entry of `{key}` as `name:` on its own line",
                )
                continue
            if key == "vars":
                self.set_group_vars(path, name, value)
            elif key == "children":
                for child, child_body in value.items():
                    child_name = self.read_group(path, child, child_body)
                    if child_name is not None:
                        self.add_child(name, child_name, path)
            else:
                self.read_hosts(path, name, value)
        return name

    def set_group_vars(self, path: str, group: str, values: Mapping[str, Any]) -> None:
        draft = self.groups[group]
        for key, value in values.items():
            if key != "ansible_group_priority":
                draft.vars[key] = value
            elif value is not None:  # Ansible ignores a null priority
                try:
                    draft.priority = int(value)
                except (TypeError, ValueError):
                    self.problem(
                        path,
                        f"group {group}",
                        f"ansible_group_priority {value!r} is not an integer",
                        "set it to a whole number (higher wins among groups of the same depth)",
                    )

    def read_hosts(self, path: str, group: str, entries: Mapping[Any, Any]) -> None:
        for entry, host_vars in entries.items():
            if self.full:
                return
            if not isinstance(entry, str):
                self.problem(
                    path,
                    f"group {group}",
                    f"host entry {entry!r} is not a string",
                    "quote host names that look like numbers",
                )
                continue
            if host_vars is not None and not isinstance(host_vars, Mapping):
                self.problem(
                    path,
                    f"host {entry}",
                    f"host vars are {_kind(host_vars)}, not a mapping",
                    f"write `{entry}:` followed by indented `key: value` lines",
                )
                continue
            pattern, port = split_port(entry)
            try:
                names = expand_host_pattern(pattern)
            except HostCountError as err:
                self.problem(path, f"group {group}", str(err), HOST_CAP_FIX)
                continue
            except HostPatternError as err:
                self.problem(
                    path,
                    f"group {group}",
                    str(err),
                    "write ranges as [01:16], [a:f] or [1:16:2] (begin:end[:step])",
                )
                continue
            self.add_hosts(names, group, port, path, host_vars)
            if len(self.hosts) > MAX_HOSTS:  # counted as they come: the rest of the files are not read
                self.full = True
                self.problem(
                    path,
                    f"group {group}",
                    f"the inventory has more than {MAX_HOSTS:,} hosts once {_short(entry)!r} is added",
                    HOST_CAP_FIX,
                )

    def reconcile(self) -> None:
        for name, draft in list(self.groups.items()):
            if name != "all" and not draft.parents:
                self.add_child("all", name, "")
        ungrouped = self.groups["ungrouped"]
        for host in self.hosts.values():
            real = [g for g in host.groups if g not in ("all", "ungrouped")]
            if "ungrouped" in host.groups and real:
                ungrouped.hosts.remove(host.name)
                ungrouped.host_set.discard(host.name)
                host.groups.remove("ungrouped")
            elif not real and "ungrouped" not in host.groups:
                self.add_host(host.name, "ungrouped", None, host.source)


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _kind(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, str):
        return f"the string {value!r}"
    return f"a {type(value).__name__}"


def _depths(groups: Mapping[str, _GroupDraft]) -> dict[str, int]:
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
                    f"a vars file must be a mapping, not {_kind(source.data)}",
                    "write `name: value` lines at the top level",
                )
            )
            continue
        merged.update(source.data)
    return merged, entry.files


def resolve(sources: InventorySources) -> Resolution:
    """The Inventory Ansible would build from these files, with every problem found on the way."""
    structure = _Structure()
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
    structure: _Structure,
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
