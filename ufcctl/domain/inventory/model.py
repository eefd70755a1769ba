"""The resolved inventory: hosts with their merged vars and group membership, as Ansible resolves them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ufcctl.domain.inventory.sources import SourceFile

# Groups ufcctl knows (docs/architecture.md, "Inventory model").
CONTROL_PLANE = "kube_control_plane"
APISERVER_LB = "apiserver_lb"
ETCD_GROUPS = ("etcd_core", "etcd_events", "etcd_pods")
KUBE_NODE = "kube_node"
NPU_NODE = "npu_node"
NFS_SERVER = "nfs_server"
MONITORING = "monitoring"  # VictoriaMetrics, vmagent, vmalert, Alertmanager (roles/monitoring)
REGISTRY_CACHE = "registry_cache"  # pull-through image caches per ToR or super pod (roles/registry_cache)


@dataclass(frozen=True)
class Group:
    name: str
    children: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()  # direct members only, in file order
    vars: Mapping[str, Any] = field(default_factory=dict)  # this group's own vars (file + group_vars/)
    source: str = ""  # file where the group is first defined, for error messages
    parents: tuple[str, ...] = ()
    depth: int = 0  # longest path from `all`; Ansible merges group vars by (depth, priority, name)
    priority: int = 1  # `ansible_group_priority` set in an inventory file
    file_vars: Mapping[str, Any] = field(default_factory=dict)  # vars from inventory files only
    vars_files: tuple[SourceFile, ...] = ()  # group_vars/ files, in load order

    @property
    def sort_key(self) -> tuple[int, int, str]:
        return (self.depth, self.priority, self.name)


@dataclass(frozen=True)
class Host:
    name: str
    vars: Mapping[str, Any]  # fully merged with Ansible's precedence (what `ansible-inventory --list` shows)
    groups: frozenset[str]  # every group the host belongs to, ancestors included, plus "all"
    source: str = ""  # file where the host is first defined, for error messages
    file_vars: Mapping[str, Any] = field(default_factory=dict)  # vars set on the host in inventory files
    vars_files: tuple[SourceFile, ...] = ()  # host_vars/ files, in load order

    @property
    def address(self) -> str:
        return str(self.vars.get("ansible_host", self.name))


@dataclass
class Inventory:
    path: str
    hosts: dict[str, Host]  # in Ansible's order of first appearance
    groups: dict[str, Group]
    _members: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def group_hosts(self, name: str) -> list[str]:
        """Hosts of a group and its descendants, in inventory order (empty for an unknown group)."""
        found = self._members.get(name)
        if found is None:  # one pass per group asked for (a few per command), memoised
            found = self._members[name] = [h for h, host in self.hosts.items() if name in host.groups]
        return list(found)

    def in_group(self, host: str, group: str) -> bool:
        return group in self.hosts[host].groups

    def subset(self, names: Iterable[str]) -> list[Host]:
        return [self.hosts[n] for n in names]

    def var_origin(self, host: str, key: str) -> str:
        """The file that gave `host` its value of `key` (Ansible's precedence, highest layer first)."""
        entry = self.hosts[host]
        for source in reversed(entry.vars_files):
            if isinstance(source.data, Mapping) and key in source.data:
                return source.path
        if key in entry.file_vars:
            return entry.source
        chain = sorted((self.groups[g] for g in entry.groups if g != "all"), key=lambda g: g.sort_key)
        everyone = self.groups.get("all")
        for group in [*reversed(chain), *([everyone] if everyone else [])]:
            for source in reversed(group.vars_files):
                if isinstance(source.data, Mapping) and key in source.data:
                    return source.path
        for group in [*reversed(chain), *([everyone] if everyone else [])]:
            if key in group.file_vars:
                return group.source
        return entry.source
