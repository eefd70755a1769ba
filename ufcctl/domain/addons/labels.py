"""Node labels MindCluster expects (docs/reference/ascend.md §3), planned from the inventory's topology vars.

Masters get `masterselector=dls-master-node`; NPU workers get the worker selector, host-arch,
accelerator and accelerator-type. Nodes with the same labels are grouped, so 16,000 nodes become a
few `kubectl label` calls of at most `chunk` names each, not 16,000.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ufcctl.domain import label_syntax
from ufcctl.domain.arch import ARCH_VAR, HOST_ARCH_LABELS

HOST_ARCHS = ("huawei-arm", "huawei-x86")
# accelerator-type prefixes of Atlas 350/850/950, which use the `huawei.com/npu` resource
# (docs/reference/ascend.md §3).
_NPU_FAMILY = ("350-", "850-", "950-")


@dataclass(frozen=True)
class LabelGroup:
    labels: tuple[tuple[str, str], ...]
    nodes: tuple[str, ...]

    def kubectl_args(self) -> list[str]:
        return ["label", "nodes", "--overwrite", *self.nodes, *(f"{k}={v}" for k, v in self.labels)]


@dataclass(frozen=True)
class LabelPlan:
    groups: tuple[LabelGroup, ...]
    nodes: int


def accelerator_for(accelerator_type: str) -> str:
    """The `accelerator` label of a node type: huawei-npu for Atlas 350/850/950, else the 910 family."""
    return "huawei-npu" if accelerator_type.startswith(_NPU_FAMILY) else "huawei-Ascend910"


def node_labels(hostvars: Mapping[str, Any], master: bool, worker: bool, host_arch: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    if master:
        labels["masterselector"] = "dls-master-node"
    if worker:
        accel_type = str(hostvars.get("npu_accelerator_type") or "")
        labels["node-role.kubernetes.io/worker"] = "worker"
        labels["workerselector"] = "dls-worker-node"
        # npu_host_arch, else the host's ufc_arch (as roles/kube_node labels it), else the add-on's default
        labels["host-arch"] = str(hostvars.get("npu_host_arch")
                                  or HOST_ARCH_LABELS.get(str(hostvars.get(ARCH_VAR))) or host_arch)
        if accel_type:
            labels["accelerator"] = accelerator_for(accel_type)
            labels["accelerator-type"] = accel_type
    return labels


def worker_labels(
    hostvars: Mapping[str, Any], npu: bool, host_arch: str, tor_label: str, extra: Mapping[str, Any] | None
) -> dict[str, str]:
    """Every label a worker ends up with from ufcctl (roles/kube_node): MindCluster's on NPU nodes,
    its ToR under `tor_label` (when the host has npu_tor_id), then the inventory's `extra` labels."""
    wanted = node_labels(hostvars, False, True, host_arch) if npu else {}
    tor = hostvars.get("npu_tor_id")
    if tor is not None and tor_label:
        wanted[str(tor_label)] = str(tor)
    return {**wanted, **{str(k): str(v) for k, v in dict(extra or {}).items()}}


def plan_labels(
    masters: Sequence[str],
    workers: Sequence[str],
    hostvars: Mapping[str, Mapping[str, Any]],
    host_arch: str = "huawei-arm",
    chunk: int = 500,
) -> tuple[LabelPlan, list[str]]:
    """Label groups (same labels, at most `chunk` nodes each) and problems naming host and label."""
    problems: list[str] = []
    by_labels: dict[tuple[tuple[str, str], ...], list[str]] = {}
    master_set, worker_set = set(masters), set(workers)
    for host in dict.fromkeys([*masters, *workers]):
        hv = hostvars[host]
        labels = node_labels(hv, host in master_set, host in worker_set, host_arch)
        arch = labels.get("host-arch")
        if arch is not None and arch not in HOST_ARCHS:
            problems.append(f"host {host}: host-arch {arch!r} must be one of {', '.join(HOST_ARCHS)}")
        bad = [f"{k}={v!r}" for k, v in labels.items() if label_syntax.value_problem(v)]
        if bad:
            problems.append(f"host {host}: invalid label value(s) {', '.join(bad)}")
        node = str(hv.get("npu_node_name") or host)
        by_labels.setdefault(tuple(sorted(labels.items())), []).append(node)
    groups = tuple(
        LabelGroup(labels, tuple(nodes[i : i + chunk]))
        for labels, nodes in by_labels.items()
        for i in range(0, len(nodes), chunk)
    )
    return LabelPlan(groups, sum(len(n) for n in by_labels.values())), problems
