"""Jinja filters exposing ufcctl's add-on domain code (ToR map, node labels, compatibility) to the role.

The logic lives in ufcctl/domain/addons/, so tests and ufcctl compute the same ConfigMap and labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError

from ufcctl.domain.addons import compat, labels, tor
from ufcctl.domain.placement.profiles import chips_by_type

_TOPOLOGY_KEYS = (
    "npu_tor_id",
    "npu_tor_ip",
    "npu_node_ip",
    "ansible_host",
    "npu_count",
    "npu_slice_id",
    "npu_accelerator_type",
    "npu_host_arch",
    "ufc_arch",
    "npu_node_name",
)


def _plain(
    groups: Mapping[str, Sequence[str]], hostvars: Any, names: Sequence[str]
) -> dict[str, dict[str, Any]]:
    result = {}
    for host in names:
        hv = hostvars[host]
        result[host] = {key: hv[key] for key in _TOPOLOGY_KEYS if key in hv}
    return result


def _fail(problems: list[str]) -> None:
    shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
    raise AnsibleFilterError("\n".join(shown))


def ufcctl_ascend_tor_configmap(
    groups: Mapping[str, Sequence[str]], hostvars: Any, tor_level: str = ""
) -> dict:
    """{'body', 'data_bytes', 'servers', 'tors'} for kube-system/basic-tor-node-cm (kube_node hosts)."""
    names = list(groups.get("kube_node", ()))
    servers, problems = tor.servers_from_hostvars(names, _plain(groups, hostvars, names), chips_by_type())
    if problems:
        _fail(problems)
    try:
        cm = tor.tor_configmap(servers, str(tor_level or ""))
    except tor.TorMapError as err:
        _fail(err.problems)
    return {"body": dict(cm.body), "data_bytes": cm.data_bytes, "servers": cm.servers, "tors": cm.tors}


def ufcctl_ascend_label_plan(
    groups: Mapping[str, Sequence[str]], hostvars: Any, host_arch: str = "huawei-arm", chunk: int = 500
) -> dict:
    """{'nodes': N, 'groups': [{'labels': {...}, 'nodes': [...], 'args': [kubectl args]}]}."""
    masters = list(groups.get("kube_control_plane", ()))
    workers = list(groups.get("npu_node", ()))
    names = list(dict.fromkeys([*masters, *workers]))
    plan, problems = labels.plan_labels(
        masters, workers, _plain(groups, hostvars, names), host_arch, int(chunk)
    )
    if problems:
        _fail(problems)
    return {
        "nodes": plan.nodes,
        "groups": [
            {"labels": dict(g.labels), "nodes": list(g.nodes), "args": g.kubectl_args()} for g in plan.groups
        ],
    }


def ufcctl_ascend_compat_problems(
    versions: Mapping[str, str], mindcluster: str, kube: str, volcano: str = "", driver: str = ""
) -> list[str]:
    """Every version mismatch (empty: compatible); see ufcctl/domain/addons/compat.py."""
    components = {str(k): str(v) for k, v in versions.items()}
    return compat.check_compatibility(
        str(mindcluster), components, str(kube), str(volcano) or None, str(driver) or None
    )


def ufcctl_ascend_compat_warnings(mindcluster: str, kube: str) -> list[str]:
    """What is allowed but outside MindCluster's statement (a newer Kubernetes); see compat.kube_warnings."""
    return compat.kube_warnings(str(mindcluster), str(kube))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "ufcctl_ascend_tor_configmap": ufcctl_ascend_tor_configmap,
            "ufcctl_ascend_label_plan": ufcctl_ascend_label_plan,
            "ufcctl_ascend_compat_problems": ufcctl_ascend_compat_problems,
            "ufcctl_ascend_compat_warnings": ufcctl_ascend_compat_warnings,
        }
