"""Jinja filters exposing ufcctl's VIP plan (VRRP priorities, peers, backends, haproxy sizing) to the role.

The logic lives in ufcctl/domain/controlplane (vrrp.py, haproxy.py, addresses.py), tested without
machines; these wrappers only translate Ansible's shapes (groups, hostvars) to it and back.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

try:
    from ufcctl.domain.controlplane import addresses, haproxy, vrrp
except ImportError:  # plain ansible-playbook from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
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


def ufcctl_apiserver_lb_plan(
    hosts: Sequence[str],
    hostvars: Any,
    vip: str,
    router_id: int,
    auth_pass: str,
    priority: int,
    step: int,
) -> dict[str, Any]:
    """{'problems': [...], 'track_weight': int, 'peers': {host: {address, priority, unicast_peers}}}."""
    hosts = list(hosts)
    found = {h: str(_get(hostvars, h, "__apiserver_lb_own_address") or "") for h in hosts}
    problems = [a.removeprefix("ERROR: ") for a in found.values() if a.startswith("ERROR: ")]
    problems += [f"host {h}: address unknown (not in this run?)" for h, a in found.items() if not a]
    if problems:
        return {"problems": problems, "track_weight": 0, "peers": {}}
    problems = vrrp.vrrp_problems(
        hosts, found, str(vip), int(router_id), str(auth_pass), int(priority), int(step)
    )
    plan = vrrp.plan_vrrp(hosts, found, int(priority), int(step))
    peers = {
        p.host: {"address": p.address, "priority": p.priority, "unicast_peers": plan.unicast_peers(p.host)}
        for p in plan.peers
    }
    return {"problems": problems, "track_weight": plan.track_weight, "peers": peers}


def ufcctl_apiserver_lb_backends(hosts: Sequence[str], hostvars: Any) -> dict[str, Any]:
    """{'servers': [{name, address}], 'problems': [...]}: kube_control_plane_address, ansible_host, facts."""
    servers, problems = [], []
    for host in hosts:
        values = {
            "kube_control_plane_address": _get(hostvars, host, "kube_control_plane_address"),
            "ansible_host": _get(hostvars, host, "ansible_host"),
            "fact_address": _get(hostvars, host, "__apiserver_lb_own_address"),
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


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "ufcctl_apiserver_lb_address": ufcctl_apiserver_lb_address,
            "ufcctl_apiserver_lb_plan": ufcctl_apiserver_lb_plan,
            "ufcctl_apiserver_lb_backends": ufcctl_apiserver_lb_backends,
            "ufcctl_apiserver_lb_sizing": ufcctl_apiserver_lb_sizing,
        }
