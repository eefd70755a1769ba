"""The resolved inventory: hosts with their merged vars and group membership, as Ansible resolves them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Groups ufcctl knows (ARCHITECTURE.md, "Inventory model").
CONTROL_PLANE = "kube_control_plane"
APISERVER_LB = "apiserver_lb"
ETCD_GROUPS = ("etcd_core", "etcd_events", "etcd_pods")
KUBE_NODE = "kube_node"
NPU_NODE = "npu_node"
NFS_SERVER = "nfs_server"


@dataclass(frozen=True)
class Group:
    name: str
    children: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()  # direct members only, in file order
    vars: Mapping[str, Any] = field(default_factory=dict)  # this group's own vars (file + group_vars/)
    source: str = ""  # file where the group is first defined, for error messages


@dataclass(frozen=True)
class Host:
    name: str
    vars: Mapping[str, Any]  # fully merged with Ansible's precedence (what `ansible-inventory --list` shows)
    groups: frozenset[str]  # every group the host belongs to, ancestors included, plus "all"
    source: str = ""  # file where the host is first defined, for error messages

    @property
    def address(self) -> str:
        return str(self.vars.get("ansible_host", self.name))


@dataclass
class Inventory:
    path: str
    hosts: dict[str, Host]  # in Ansible's order of first appearance
    groups: dict[str, Group]

    def group_hosts(self, name: str) -> list[str]:
        """Hosts of a group and its descendants, in inventory order (empty for an unknown group)."""
        return [h for h, host in self.hosts.items() if name in host.groups]

    def in_group(self, host: str, group: str) -> bool:
        return group in self.hosts[host].groups

    def subset(self, names: Iterable[str]) -> list[Host]:
        return [self.hosts[n] for n in names]
