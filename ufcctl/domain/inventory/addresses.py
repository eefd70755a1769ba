"""Rules on the machines behind the hosts: two hosts that are one machine, where that breaks a cluster.

Two hosts with the same address and SSH port are one machine listed twice. The same address with
different SSH ports is legitimate in general (port-forwarded containers, several sshd on one box),
but not for two hosts of a group that binds network services (etcd, the apiserver, the caches, NFS,
monitoring): both members bind the same service ports on that one machine's address, and the
second fails to start or, worse, joins the first's cluster as itself. `ansible_connection: local`
is this machine, so two such hosts are one machine too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from ufcctl.domain.inventory.connection import HOST_VARS, PORT_VARS, is_template
from ufcctl.domain.inventory.model import (
    APISERVER_LB,
    CONTROL_PLANE,
    ETCD_GROUPS,
    MONITORING,
    NFS_SERVER,
    REGISTRY_CACHE,
    Inventory,
)
from ufcctl.domain.inventory.sources import Problem
from ufcctl.errors import cut

# Groups whose members bind network services on their address (docs/architecture.md, "Inventory model").
SERVICE_GROUPS = (*ETCD_GROUPS, CONTROL_PLANE, APISERVER_LB, REGISTRY_CACHE, NFS_SERVER, MONITORING)
# etcd members advertise `etcd_address` when it is set (ufcctl/domain/etcd/topology.py member_address).
ETCD_ADDRESS_VARS = ("etcd_address", *HOST_VARS)
LOCAL_CONNECTION = "local"


def _ssh_key(host_vars: Mapping[str, Any], name: str) -> tuple[str, str]:
    address = next((host_vars[v] for v in HOST_VARS if v in host_vars), name)
    port = next((host_vars[v] for v in PORT_VARS if v in host_vars), 22)
    return str(address), str(port)


def check_addresses(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """Two hosts with the same address and SSH port."""
    seen: dict[tuple[str, str], str] = {}
    for name, host in inv.hosts.items():
        key = _ssh_key(host.vars, name)
        first = seen.setdefault(key, name)
        if first != name:
            var = next((v for v in HOST_VARS if v in host.vars), None)
            where = inv.var_origin(name, var) if var else host.source
            problems.append(
                Problem(
                    where,
                    f"host {name}",
                    f"address {cut(key[0])} is also host {first}'s",
                    "give each host its own ansible_host (or list the machine once)",
                )
            )


def _machine(value: Any) -> str | None:
    """The address in one spelling (IPv6 compressed, names lower-case without the final dot), or
    None for a template, whose value only Ansible knows."""
    if is_template(value):
        return None
    text = str(value).strip()
    try:
        return ipaddress.ip_address(text).compressed
    except ValueError:
        return text.lower().rstrip(".")


def service_address(group: str, name: str, host_vars: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(address the host's services bind in `group`, the var it comes from or None for the name)."""
    for var in ETCD_ADDRESS_VARS if group in ETCD_GROUPS else HOST_VARS:
        value = host_vars.get(var)
        if value not in (None, ""):
            return _machine(value), var
    return _machine(name), None


def check_service_addresses(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """Two members of one service group at one address, whatever their SSH ports: one line per pair."""
    pairs: dict[tuple[str, str, str], list[str]] = {}  # (host, first host, address) -> groups
    origin: dict[str, str] = {}
    for group in SERVICE_GROUPS:
        first_at: dict[str, str] = {}
        for name in inv.group_hosts(group):
            hvars = inv.hosts[name].vars
            address, var = service_address(group, name, hvars)
            if address is None:
                continue
            first = first_at.setdefault(address, name)
            if first == name or _ssh_key(hvars, name) == _ssh_key(inv.hosts[first].vars, first):
                continue  # the same host, or the same machine check_addresses reports already
            pairs.setdefault((name, first, address), []).append(group)
            origin.setdefault(name, inv.var_origin(name, var) if var else inv.hosts[name].source)
    for (name, first, address), groups in pairs.items():
        problems.append(
            Problem(
                origin[name],
                f"host {name}",
                f"is at {cut(address)} like host {first}, and both are in {', '.join(groups)}: "
                "one machine cannot run two members (their service ports clash)",
                "give each member its own machine (ansible_host"
                + (", etcd_address" if set(groups) & set(ETCD_GROUPS) else "")
                + "), or list the machine once",
            )
        )


def check_local_hosts(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """`ansible_connection: local` means this machine: only one host may say so."""
    local = [name for name, host in inv.hosts.items()
             if str(host.vars.get("ansible_connection", "")).rpartition(".")[2] == LOCAL_CONNECTION]
    for name in local[1:]:
        problems.append(
            Problem(
                inv.var_origin(name, "ansible_connection"),
                f"host {name}",
                f"ansible_connection local, like host {local[0]}: both are this machine",
                "keep ansible_connection: local on one host and give the others their own addresses",
            )
        )


RULES = (check_addresses, check_service_addresses, check_local_hosts)
