"""Jinja filters exposing ufcctl's etcd topology (members, ports, apiserver flags) to the role.

The logic lives in ufcctl/domain/etcd/topology.py, so `ufcctl etcd ...`, the role and the
control-plane role compute member URLs and --etcd-servers(-overrides) from one implementation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ufcctl.domain.etcd import pki, rule, topology
from ufcctl.domain.nfs import backup_store


def _groups(groups: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    return {kind.group: list(groups.get(kind.group, ())) for kind in topology.CLUSTER_KINDS}


def _hostvars(groups: Mapping[str, Sequence[str]], hostvars: Any) -> dict[str, dict[str, Any]]:
    keys = ["etcd_address", "ansible_host"] + [
        topology.port_var(kind.name, what)
        for kind in topology.CLUSTER_KINDS
        for what in ("client", "peer", "metrics")
    ]
    result: dict[str, dict[str, Any]] = {}
    for hosts in _groups(groups).values():
        for host in hosts:
            if host not in result:
                hv = hostvars[host]
                result[host] = {key: hv[key] for key in keys if key in hv}
    return result


def ufcctl_etcd_clusters(groups: Mapping[str, Sequence[str]], hostvars: Any) -> list[dict[str, Any]]:
    """Every cluster with members: name, group, client_urls, initial_cluster, members[]."""
    return topology.cluster_facts(topology.clusters_from_groups(_groups(groups), _hostvars(groups, hostvars)))


def ufcctl_etcd_apiserver_flags(groups: Mapping[str, Sequence[str]], hostvars: Any) -> dict[str, Any]:
    """{'servers': ..., 'overrides': ..., 'args': [...]} for kube-apiserver."""
    clusters = topology.clusters_from_groups(_groups(groups), _hostvars(groups, hostvars))
    flags = topology.apiserver_etcd_flags(clusters)
    return {"servers": flags.servers, "overrides": flags.overrides, "args": flags.as_args()}


def ufcctl_etcd_problems(
    groups: Mapping[str, Sequence[str]], hostvars: Any, allow_single: bool = False
) -> list[str]:
    """Member counts and port clashes that make the etcd inventory unusable (empty: fine)."""
    clusters = topology.clusters_from_groups(_groups(groups), _hostvars(groups, hostvars))
    return topology.inventory_problems(clusters, bool(allow_single))


def ufcctl_etcd_rule_error(text: str) -> str:
    """'' when `text` is a valid defrag rule, else the parser's message (with the column)."""
    try:
        rule.parse_rule(str(text))
    except rule.RuleError as err:
        return str(err)
    return ""


def ufcctl_etcd_certs_to_issue(
    certs: Sequence[Mapping[str, Any]], probed: Mapping[str, Any] | None, ca_pem: str | None,
    renew_days: Any = 0, renew_issued_before: Any = "",
) -> dict[str, list[str]]:
    """name -> reasons, for each of this host's certificates (the role's __etcd_certs) whose key
    must be made or fixed or which must be signed again, judged from the etcd_probe result;
    renew_days / renew_issued_before: etcd_cert_renew_days and etcd_cert_renew_issued_before."""
    requests = [pki.CertRequest.from_role(cert) for cert in certs]
    renewal = pki.Renewal.from_role(renew_days, renew_issued_before)
    return pki.certificates_to_issue(requests, probed or {}, str(ca_pem) if ca_pem else None, renewal)


def ufcctl_etcd_backup_store(groups: Mapping[str, Any], hostvars: Mapping[str, Any]) -> str:
    """nfs:// URL of the NFS server's etcd snapshot store, or "" (ufcctl/domain/nfs/backup_store.py)."""
    return backup_store.url(groups, hostvars)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "ufcctl_etcd_backup_store": ufcctl_etcd_backup_store,
            "ufcctl_etcd_clusters": ufcctl_etcd_clusters,
            "ufcctl_etcd_apiserver_flags": ufcctl_etcd_apiserver_flags,
            "ufcctl_etcd_problems": ufcctl_etcd_problems,
            "ufcctl_etcd_rule_error": ufcctl_etcd_rule_error,
            "ufcctl_etcd_certs_to_issue": ufcctl_etcd_certs_to_issue,
        }
