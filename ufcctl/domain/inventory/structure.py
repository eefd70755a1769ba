"""The inventory files' structure as ansible-core's YAML plugin reads it: groups, children, hosts.

`Structure` walks the parsed files depth first in key order (ansible-core 2.19
`plugins/inventory/yaml.py`, `inventory/data.py`) into mutable drafts, refusing loops of groups and
hosts past MAX_HOSTS; `reconcile` then hangs parentless groups under `all` and groupless hosts under
`ungrouped`. resolve.py turns the drafts into the Inventory with its vars.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ufcctl.domain.inventory.ranges import (
    MAX_HOSTS,
    HostCountError,
    HostPatternError,
    expand_host_pattern,
    split_port,
)
from ufcctl.domain.inventory.sources import Problem, SourceFile

SECTIONS = ("vars", "children", "hosts")
HOST_CAP_FIX = (
    f"check the range bounds for a typo; one inventory holds at most {MAX_HOSTS:,} hosts (README \"Limits\")"
)


class GroupDraft:
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


class HostDraft:
    __slots__ = ("name", "source", "vars", "groups")

    def __init__(self, name: str, source: str) -> None:
        self.name, self.source = name, source
        self.vars: dict[str, Any] = {}
        self.groups: list[str] = []  # direct groups, in the order the host was added to them


class Structure:
    """Groups and hosts as the inventory files define them (mutable while files are walked)."""

    def __init__(self) -> None:
        self.groups: dict[str, GroupDraft] = {}
        self.hosts: dict[str, HostDraft] = {}
        self.problems: list[Problem] = []
        self.full = False  # MAX_HOSTS reached: further host entries are not read
        for name in ("all", "ungrouped"):
            self.groups[name] = GroupDraft(name, "")
        self.add_child("all", "ungrouped", "")

    def problem(self, file: str, subject: str, message: str, fix: str = "") -> None:
        self.problems.append(Problem(file, subject, message, fix))

    def group(self, name: str, source: str) -> GroupDraft:
        draft = self.groups.get(name)
        if draft is None:
            draft = self.groups[name] = GroupDraft(name, source)
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

    def add_child(self, parent: str, child: str, source: str) -> None:
        pgroup, cgroup = self.groups[parent], self.groups[child]
        if child in pgroup.child_set:
            return
        if closes_loop(self.groups, parent, child):
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

    def add_host(self, name: str, group: str, port: int | None, source: str) -> HostDraft:
        host = self.hosts.get(name)
        if host is None:
            host = self.hosts[name] = HostDraft(name, source)
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
                host = hosts[name] = HostDraft(name, source)
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
                f"an inventory file must be a mapping of groups, not {kind_of(data)}",
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
                f"the group definition is {kind_of(body)}, not a mapping",
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
                    f"`{key}` is {kind_of(value)}, not a mapping",
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
                except (TypeError, ValueError, OverflowError):  # OverflowError: .inf in YAML
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
                    f"host vars are {kind_of(host_vars)}, not a mapping",
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
                    f"the inventory has more than {MAX_HOSTS:,} hosts once {short(entry)!r} is added",
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


def short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def kind_of(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, str):
        return f"the string {value!r}"
    return f"a {type(value).__name__}"


def closes_loop(groups: Mapping[str, GroupDraft], parent: str, child: str) -> bool:
    """Would `child` under `parent` close a loop (is `parent` already below `child`)?

    Two searches in step, up from the parent and down from the child; the first to run out
    decides. Adding a group at either end of a long chain then costs a step or two, not the
    chain's length (10,000 chained groups read in about a second instead of a minute).
    """
    if child == parent:
        return True
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
