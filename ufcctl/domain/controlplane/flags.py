"""Flags of kube-apiserver / controller-manager and kubelet settings for kubeadm, with consistency checks."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DNS_MODES = ("nodelocal", "coredns")
GOAWAY_CHANCE_MAX = 0.02  # kube-apiserver rejects more (options/server_run_options.go)
# kubeadm sets these itself from ClusterConfiguration fields; an extraArgs copy would fight them.
KUBEADM_OWNED = {
    "apiserver": {"etcd-servers", "etcd-cafile", "etcd-certfile", "etcd-keyfile", "service-cluster-ip-range"},
    "controller-manager": {"cluster-cidr", "service-cluster-ip-range", "kubeconfig"},
    "scheduler": {"kubeconfig"},
}
_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class FlagError(ValueError):
    """A setting kube-apiserver, the controller-manager or kubeadm would refuse (message names it)."""


def duration_seconds(text: str) -> float:
    """Go's time.ParseDuration for the forms used here ("10s", "1h30m", "500ms")."""
    value = str(text)
    if not _DURATION.match(value):
        raise FlagError(f"{value!r} is not a Go duration such as 10s, 5m or 1h")
    return sum(
        float(n) * _UNIT_SECONDS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", value)
    )


def _flag_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return ",".join(f"{k}#{v}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def extra_args(component: str, settings: Mapping[str, Any], extra: Mapping[str, Any]) -> list[dict[str, str]]:
    """kubeadm v1beta4 extraArgs ([{name, value}], sorted by name): `settings` then `extra` on top.

    A None or "" value drops the flag (the component's own default applies). Flags kubeadm owns are
    refused with the ClusterConfiguration field to use instead.
    """
    merged = {**settings, **extra}
    owned = sorted(set(merged) & KUBEADM_OWNED.get(component, set()))
    if owned:
        raise FlagError(
            f"{component}: {', '.join(owned)} is set by kubeadm from ClusterConfiguration, not extraArgs"
        )
    return [
        {"name": str(name), "value": _flag_value(value)}
        for name, value in sorted(merged.items())
        if value is not None and _flag_value(value) != ""
    ]


def concurrent_sync_flags(syncs: Mapping[str, int]) -> dict[str, int]:
    """{'deployment': 10} -> {'concurrent-deployment-syncs': 10}."""
    return {f"concurrent-{name}-syncs": int(n) for name, n in syncs.items()}


def service_dns_ip(service_subnet: str) -> str:
    """CoreDNS's Service IP: the 10th address of the service range, as kubeadm picks it."""
    net = ipaddress.ip_network(service_subnet.split(",")[0].strip(), strict=False)
    return str(net.network_address + 10)


def cluster_dns(mode: str, nodelocaldns_ip: str, service_subnet: str) -> list[str]:
    """kubelet clusterDNS: the node-local cache's link-local IP, or CoreDNS's Service IP.

    NodeLocal DNSCache listens on `nodelocaldns_ip` on every node (kubernetes.io "Using NodeLocal
    DNSCache"); pointing kubelets there keeps 16,000 nodes' lookups off CoreDNS and conntrack.
    """
    if mode not in DNS_MODES:
        raise FlagError(f"ufc_dns_mode={mode!r} must be one of {', '.join(DNS_MODES)}")
    if mode == "nodelocal":
        ip = ipaddress.ip_address(nodelocaldns_ip)
        if not ip.is_link_local:
            raise FlagError(
                f"nodelocaldns_ip={nodelocaldns_ip} must be link-local (169.254.0.0/16) "
                "as NodeLocal DNSCache uses"
            )
        return [str(ip)]
    return [service_dns_ip(service_subnet)]


@dataclass(frozen=True)
class TimingInputs:
    node_monitor_period: str
    node_monitor_grace_period: str
    node_status_update_frequency: str
    goaway_chance: float
    apiservers: int


def timing_problems(t: TimingInputs) -> list[str]:
    """Settings that contradict each other across components (empty: consistent)."""
    problems = []
    try:
        grace = duration_seconds(t.node_monitor_grace_period)
        update = duration_seconds(t.node_status_update_frequency)
        period = duration_seconds(t.node_monitor_period)
    except FlagError as err:
        return [str(err)]
    # kube-controller-manager's help for --node-monitor-grace-period: "Must be N times more than
    # kubelet's nodeStatusUpdateFrequency, where N means number of retries allowed for kubelet to
    # post node status". ufcctl asks for N >= 4 so one slow apiserver never flaps 16,000 nodes.
    if grace < 4 * update:
        problems.append(
            f"node-monitor-grace-period {t.node_monitor_grace_period} is under 4 x kubelet "
            f"nodeStatusUpdateFrequency {t.node_status_update_frequency}: healthy nodes would flap NotReady"
        )
    if period > grace:
        problems.append("node-monitor-period is longer than node-monitor-grace-period")
    if not 0 <= t.goaway_chance <= GOAWAY_CHANCE_MAX:
        problems.append(f"goaway-chance {t.goaway_chance} must be within 0..{GOAWAY_CHANCE_MAX}")
    if t.goaway_chance > 0 and t.apiservers < 2:
        # GOAWAY only rebalances through a load balancer with somewhere else to go.
        problems.append("goaway-chance > 0 needs more than one kube-apiserver behind the VIP")
    return problems


def cert_sans(vip: str, addresses: Sequence[str], names: Sequence[str], extra: Sequence[str]) -> list[str]:
    """apiServer.certSANs: VIP, every control-plane address and name, extras; unique, in that order."""
    seen: dict[str, None] = {}
    for value in [vip, *addresses, *names, *extra]:
        if value:
            seen.setdefault(str(value), None)
    return list(seen)


def pod_cidr_problems(pod_subnet: str, node_mask: int, node_count: int) -> list[str]:
    """The pod range must hold one /node_mask range per node (the node IPAM controller's split)."""
    try:
        net = ipaddress.ip_network(pod_subnet, strict=False)
    except ValueError as err:
        return [f"pod subnet {pod_subnet!r}: {err}"]
    if node_mask < net.prefixlen:
        return [f"node CIDR mask /{node_mask} is larger than the pod subnet {pod_subnet}"]
    ranges = 2 ** (node_mask - net.prefixlen)
    if ranges < node_count:
        return [
            f"pod subnet {pod_subnet} holds {ranges} node ranges of /{node_mask}, "
            f"fewer than {node_count} nodes"
        ]
    return []
