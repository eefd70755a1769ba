"""Jinja filters exposing ufcctl's VIP plan (VRRP priorities, peers, backends, haproxy sizing) to the role.

`ufcctl_apiserver_lb_decisions` makes every decision for the group at once from each host's probe
(roles/apiserver_lb/library/apiserver_lb_probe.py), so the role needs no per-host fact tasks.

The logic lives in ufcctl/domain/controlplane (vrrp.py, haproxy.py, addresses.py), tested without
machines; these wrappers only translate Ansible's shapes (groups, hostvars) to it and back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from ufcctl.domain.controlplane import addresses, haproxy, vrrp


def _get(hostvars: Any, host: str, key: str) -> Any:
    try:
        hv = hostvars[host]
    except KeyError:
        return None
    return hv[key] if key in hv else None


def ufcctl_apiserver_lb_address(explicit: Any, fact_address: Any, host: str) -> str:
    """This LB host's VRRP address: apiserver_lb_address, else its address on the VIP interface."""
    values = {"apiserver_lb_address": explicit, "fact_address": fact_address}
    try:
        return addresses.host_address(host, values, "apiserver_lb_address")
    except addresses.AddressError as err:
        return f"ERROR: {err}"


def ufcctl_apiserver_lb_backends(
    hosts: Sequence[str], hostvars: Any, probed: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """{'servers': [{name, address}], 'problems': [...]}: kube_control_plane_address, ansible_host, or
    the address the host's probe read when it is also an LB host (`probed`)."""
    servers, problems = [], []
    for host in hosts:
        values = {
            "kube_control_plane_address": _get(hostvars, host, "kube_control_plane_address"),
            "ansible_host": _get(hostvars, host, "ansible_host"),
            "fact_address": (probed or {}).get(host),
        }
        try:
            servers.append(
                {"name": host, "address": addresses.host_address(host, values, "kube_control_plane_address")}
            )
        except addresses.AddressError as err:
            problems.append(str(err))
    if not servers and not problems:
        problems.append("the backend group has no hosts: haproxy would have no apiserver to send to")
    return {"servers": servers, "problems": problems}


def ufcctl_apiserver_lb_sizing(
    node_count: int, per_node: int, clients: int, servers: int, hard_fd_limit: Any
) -> dict[str, Any]:
    """Frontend/server maxconn and haproxy's LimitNOFILE (see ufcctl/domain/controlplane/haproxy.py)."""
    text = str(hard_fd_limit).strip()
    hard = 0 if text in ("", "unlimited") else int(text)
    sizing = haproxy.size_haproxy(int(node_count), int(per_node), int(clients), int(servers), hard)
    return {**asdict(sizing), "wanted_fds": sizing.wanted_fds}


def ufcctl_apiserver_lb_decisions(
    hosts: Sequence[str], hostvars: Any, backend_hosts: Sequence[str], v: Mapping[str, Any]
) -> dict[str, Any]:
    """Everything the role decides for the LB group, once, on the controller, from each host's probe.

    {'addresses': {host: IP}, 'vrrp': ufcctl_apiserver_lb_plan's shape, 'backends': {servers, problems},
    'sizing': {host: ufcctl_apiserver_lb_sizing's shape}, 'problems': [...]}. `hosts` are the group's
    hosts in this run (VRRP needs all of them); `v` the role's settings.
    """
    hosts = list(hosts)
    probes = {h: _get(hostvars, h, "__apiserver_lb_probe") or {} for h in hosts}
    addresses = {
        h: ufcctl_apiserver_lb_address(
            _get(hostvars, h, "apiserver_lb_address"), probes[h].get("address") or None, h
        )
        for h in hosts
    }
    problems = [a.removeprefix("ERROR: ") for a in addresses.values() if a.startswith("ERROR: ")]
    good = {h: a for h, a in addresses.items() if not a.startswith("ERROR: ")}
    if problems:
        plan: dict[str, Any] = {"problems": [], "track_weight": 0, "peers": {}}
    else:
        plan = _vrrp(hosts, good, v)
    backends = ufcctl_apiserver_lb_backends(backend_hosts, hostvars, good)
    sizing = {
        h: ufcctl_apiserver_lb_sizing(
            v["node_count"], v["connections_per_node"], v["clients_maxconn"], len(backends["servers"]),
            probes[h].get("hard_nofile", ""),
        )
        for h in hosts
    }
    problems += plan["problems"] + backends["problems"]
    return {"addresses": good, "vrrp": plan, "backends": backends, "sizing": sizing, "problems": problems}


def _vrrp(hosts: list[str], addresses: Mapping[str, str], v: Mapping[str, Any]) -> dict[str, Any]:
    problems = vrrp.vrrp_problems(
        hosts, addresses, str(v["vip"]), int(v["router_id"]), str(v["auth_pass"]), int(v["priority"]),
        int(v["step"]),
    )
    plan = vrrp.plan_vrrp(hosts, addresses, int(v["priority"]), int(v["step"]))
    peers = {
        p.host: {"address": p.address, "priority": p.priority, "unicast_peers": plan.unicast_peers(p.host)}
        for p in plan.peers
    }
    return {"problems": problems, "track_weight": plan.track_weight, "peers": peers}


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "ufcctl_apiserver_lb_address": ufcctl_apiserver_lb_address,
            "ufcctl_apiserver_lb_backends": ufcctl_apiserver_lb_backends,
            "ufcctl_apiserver_lb_sizing": ufcctl_apiserver_lb_sizing,
            "ufcctl_apiserver_lb_decisions": ufcctl_apiserver_lb_decisions,
        }
