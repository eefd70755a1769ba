"""Jinja filters exposing ufcctl's control-plane logic (flags, DNS, checks, schemas) to the role.

The logic lives in ufcctl/domain/controlplane (flags.py, schema.py) and ufcctl/domain/etcd/topology.py;
these wrappers translate Ansible's shapes and turn domain errors into problem lists for an assert.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ufcctl.domain.controlplane import addresses, flags, kubeadm, schema
from ufcctl.domain.etcd import topology


def ufcctl_kcp_address(explicit: Any, ansible_host: Any, fact_address: Any, host: str) -> str:
    """kube_control_plane_address, else ansible_host when an IP, else the default IPv4 fact."""
    values = {
        "kube_control_plane_address": explicit,
        "ansible_host": ansible_host,
        "fact_address": fact_address,
    }
    try:
        return addresses.host_address(host, values, "kube_control_plane_address")
    except addresses.AddressError as err:
        return f"ERROR: {err}"


def ufcctl_kcp_etcd_flags(groups: Mapping[str, Sequence[str]], hostvars: Any) -> dict[str, Any]:
    """roles/etcd's `etcd_apiserver_flags` computed from the inventory (when the etcd play did not run)."""
    wanted = ["etcd_address", "ansible_host"] + [
        topology.port_var(k.name, w) for k in topology.CLUSTER_KINDS for w in ("client", "peer", "metrics")
    ]
    hv: dict[str, dict[str, Any]] = {}
    for kind in topology.CLUSTER_KINDS:
        for host in groups.get(kind.group, ()):
            hv.setdefault(host, {k: hostvars[host][k] for k in wanted if k in hostvars[host]})
    clusters = topology.clusters_from_groups(
        {k.group: list(groups.get(k.group, ())) for k in topology.CLUSTER_KINDS}, hv
    )
    try:
        wired = topology.apiserver_etcd_flags(clusters)
    except topology.WiringError as err:
        return {"servers": "", "overrides": "", "args": [], "error": str(err)}
    return {"servers": wired.servers, "overrides": wired.overrides, "args": wired.as_args()}


def ufcctl_kcp_args(
    settings: Mapping[str, Any], component: str, extra: Mapping[str, Any] | None = None
) -> Any:
    """kubeadm v1beta4 extraArgs list; a string starting with ERROR: when kubeadm owns a flag."""
    try:
        return flags.extra_args(component, settings, extra or {})
    except flags.FlagError as err:
        return f"ERROR: {err}"


def ufcctl_kcp_concurrent_syncs(syncs: Mapping[str, int]) -> dict[str, int]:
    return flags.concurrent_sync_flags(syncs)


def ufcctl_kcp_cluster_dns(mode: str, nodelocaldns_ip: str, service_subnet: str) -> Any:
    try:
        return flags.cluster_dns(str(mode), str(nodelocaldns_ip), str(service_subnet))
    except (flags.FlagError, ValueError) as err:
        return f"ERROR: {err}"


def ufcctl_kcp_problems(v: Mapping[str, Any]) -> list[str]:
    """Cross-component consistency (see flags.timing_problems, flags.pod_cidr_problems)."""
    timing = flags.TimingInputs(
        node_monitor_period=str(v["node_monitor_period"]),
        node_monitor_grace_period=str(v["node_monitor_grace_period"]),
        node_status_update_frequency=str(v["node_status_update_frequency"]),
        goaway_chance=float(v["goaway_chance"]),
        apiservers=int(v["apiservers"]),
    )
    problems = flags.timing_problems(timing)
    problems += flags.pod_cidr_problems(
        str(v["pod_subnet"]), int(v["node_cidr_mask_size"]), int(v["node_count"])
    )
    problems += [
        str(x).removeprefix("ERROR: ") for x in v.get("computed", []) if str(x).startswith("ERROR: ")
    ]
    return problems


def ufcctl_kcp_cert_sans(
    vip: str, addresses_: Sequence[str], names: Sequence[str], extra: Sequence[str]
) -> list[str]:
    return flags.cert_sans(str(vip), list(addresses_), list(names), list(extra))


def _hostvar(hostvars: Any, host: str, key: str) -> Any:
    try:
        hv = hostvars[host]
    except KeyError:
        return None
    return hv[key] if key in hv else None


def ufcctl_kcp_plan(
    hosts: Sequence[str], hostvars: Any, play_hosts: Sequence[str], v: Mapping[str, Any]
) -> dict[str, Any]:
    """Everything the role decides for the whole control plane, once, on the controller.

    {'addresses': {host: IP}, 'etcd': etcd flags, 'cluster_dns': [...], 'sans': [...], 'problems': [...]}.
    A host's address: kube_control_plane_address, else ansible_host when an IP, else the default
    IPv4 address its probe read. Hosts of the group that are not in the run keep only an explicit
    address (their names still go into the SANs); an unresolvable one is a problem only in the run.
    """
    addresses: dict[str, str] = {}
    problems: list[str] = []
    for host in hosts:
        probe = _hostvar(hostvars, host, "__kube_control_plane_probe") or {}
        address = ufcctl_kcp_address(
            _hostvar(hostvars, host, "kube_control_plane_address"),
            _hostvar(hostvars, host, "ansible_host"),
            probe.get("address") or None,
            host,
        )
        if not address.startswith("ERROR: "):
            addresses[host] = address
        elif host in play_hosts:
            problems.append(address)
    given = v.get("etcd")
    etcd = dict(given) if isinstance(given, Mapping) else ufcctl_kcp_etcd_flags(v["groups"], hostvars)
    if etcd.get("error"):
        problems.append(str(etcd["error"]))
    dns = ufcctl_kcp_cluster_dns(v["dns_mode"], v["nodelocaldns_ip"], v["service_subnet"])
    problems += ufcctl_kcp_problems({**v["checks"], "computed": [dns]})
    sans = ufcctl_kcp_cert_sans(v["vip"], list(addresses.values()), list(hosts), v["cert_sans"])
    return {"addresses": addresses, "etcd": etcd, "cluster_dns": dns, "sans": sans, "problems": problems}


def ufcctl_kcp_schema_errors(docs: Any) -> list[str]:
    """Strict-schema problems of the documents of one rendered file (empty: valid)."""
    return schema.documents_errors([d for d in docs if d is not None])


def ufcctl_kcp_ca_hash(pem: str) -> str:
    return kubeadm.ca_hash(pem)


def ufcctl_kcp_kubeadm_failure(result: Mapping[str, Any], secrets: Sequence[str]) -> str:
    return kubeadm.failure_message(result, secrets)


def ufcctl_kcp_join_retryable(result: Mapping[str, Any]) -> bool:
    return kubeadm.join_retryable(result)


def ufcctl_kcp_joining(hosts: Sequence[str], hostvars: Any, play_hosts: Sequence[str],
                       first: str) -> list[str]:
    """The control planes of this run that kubeadm will join (their probe found no kubelet.conf)."""
    return [
        h for h in hosts if h != first and h in play_hosts
        and not (_hostvar(hostvars, h, "__kube_control_plane_probe") or {}).get("joined", True)
    ]


def ufcctl_kcp_token_state(output: str, token: str, margin_seconds: Any) -> str:
    """valid / expiring / missing: the cluster's view of the control-plane join token (D17)."""
    return kubeadm.token_state(str(output or ""), str(token), datetime.now(UTC), float(margin_seconds))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "ufcctl_kcp_address": ufcctl_kcp_address,
            "ufcctl_kcp_etcd_flags": ufcctl_kcp_etcd_flags,
            "ufcctl_kcp_args": ufcctl_kcp_args,
            "ufcctl_kcp_concurrent_syncs": ufcctl_kcp_concurrent_syncs,
            "ufcctl_kcp_cluster_dns": ufcctl_kcp_cluster_dns,
            "ufcctl_kcp_problems": ufcctl_kcp_problems,
            "ufcctl_kcp_cert_sans": ufcctl_kcp_cert_sans,
            "ufcctl_kcp_plan": ufcctl_kcp_plan,
            "ufcctl_kcp_schema_errors": ufcctl_kcp_schema_errors,
            "ufcctl_kcp_ca_hash": ufcctl_kcp_ca_hash,
            "ufcctl_kcp_kubeadm_failure": ufcctl_kcp_kubeadm_failure,
            "ufcctl_kcp_joining": ufcctl_kcp_joining,
            "ufcctl_kcp_join_retryable": ufcctl_kcp_join_retryable,
            "ufcctl_kcp_token_state": ufcctl_kcp_token_state,
        }
