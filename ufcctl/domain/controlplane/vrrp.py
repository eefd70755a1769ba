"""keepalived's VRRP plan for the apiserver VIP: priorities, track weight, unicast peers, checks."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# keepalived's VRRPv2 PASS authentication uses the first 8 characters only (keepalived.conf(5)),
# so a longer password would silently differ from what the operator believes is configured.
AUTH_PASS_MAX = 8
PRIORITY_MAX = 254  # 255 is reserved for the address owner (RFC 3768 5.3.4)


@dataclass(frozen=True)
class VrrpPeer:
    host: str
    address: str
    priority: int


@dataclass(frozen=True)
class VrrpPlan:
    peers: tuple[VrrpPeer, ...]
    track_weight: int  # negative: subtracted from a peer's priority while its check fails

    def peer(self, host: str) -> VrrpPeer:
        for p in self.peers:
            if p.host == host:
                return p
        raise KeyError(f"{host} is not an apiserver_lb host")

    def unicast_peers(self, host: str) -> list[str]:
        """Every other peer's address: the keepalived unicast_peer block of `host`."""
        return [p.address for p in self.peers if p.host != host]


def plan_vrrp(hosts: Sequence[str], addresses: Mapping[str, str], top_priority: int, step: int) -> VrrpPlan:
    """Priorities fall by `step` in inventory order, so the VIP's preferred holder is predictable.

    The track weight is larger than the whole spread: a holder whose haproxy or apiserver check
    fails drops below every healthy peer (kubeadm's sample uses weight -2 with 101/100, which only
    works for two hosts). When every check fails (a cluster being bootstrapped), all drop alike and
    the order stays, so the VIP still has one holder for kubeadm to reach.
    """
    peers = tuple(VrrpPeer(h, addresses[h], top_priority - i * step) for i, h in enumerate(hosts))
    spread = top_priority - peers[-1].priority if peers else 0
    return VrrpPlan(peers, -(spread + 1))


def vrrp_problems(
    hosts: Sequence[str],
    addresses: Mapping[str, str],
    vip: str,
    router_id: int,
    auth_pass: str,
    top_priority: int,
    step: int,
) -> list[str]:
    """Everything that would make keepalived refuse the config or elect wrongly (empty: fine)."""
    problems: list[str] = []
    if not hosts:
        problems.append("group apiserver_lb has no hosts (it defaults to kube_control_plane)")
    try:
        vip_ip = ipaddress.ip_address(vip)
    except ValueError:
        problems.append(f"ufc_vip={vip!r} is not an IP address")
        vip_ip = None
    by_address: dict[str, list[str]] = {}
    for host in hosts:
        by_address.setdefault(addresses[host], []).append(host)
    for address, owners in by_address.items():
        if len(owners) > 1:
            problems.append(f"hosts {', '.join(owners)} share the address {address}")
        if vip_ip is not None and address == str(vip_ip):
            problems.append(f"ufc_vip {vip} is the address of host {owners[0]}: pick an unused address")
    if not 1 <= router_id <= 255:
        problems.append(f"apiserver_lb_vrrp_router_id={router_id} must be 1..255")
    if not 1 <= len(auth_pass) <= AUTH_PASS_MAX:
        problems.append(f"apiserver_lb_vrrp_auth_pass must be 1..{AUTH_PASS_MAX} characters (VRRPv2 PASS)")
    lowest = top_priority - (len(hosts) - 1) * step
    if step < 1 or top_priority > PRIORITY_MAX or lowest < 1:
        problems.append(
            f"priorities {top_priority} down by {step} for {len(hosts)} hosts leave 1..{PRIORITY_MAX}: "
            "change apiserver_lb_vrrp_priority or apiserver_lb_vrrp_priority_step"
        )
    return problems
