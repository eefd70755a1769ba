"""Checks of a component against the cluster it goes to, before anything is applied.

(a) every custom resource's CRD is applied by this component, by an earlier component of the same
deploy, or declared to be on the cluster already; (b) every Deployment, DaemonSet and StatefulSet
can be placed on the inventory's nodes, given the labels and taints ufcctl gives them; (c) every
node a label plan names is a node of the run. Toleration and selector matching follow
kube-scheduler's filters (K `staging/src/k8s.io/api/core/v1/toleration.go`, `NodeAffinity`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ufcctl.domain.addons.labels import node_labels, worker_labels
from ufcctl.domain.arch import ARCH_VAR, HOST_ARCH_LABELS
from ufcctl.domain.manifests.crds import CRD_KIND, custom_kinds
from ufcctl.domain.manifests.objects import K8sObject, Problem

# What kubeadm gives every control plane (K cmd/kubeadm/app/constants/constants.go).
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
_CONTROL_PLANE_LABELS = {
    CONTROL_PLANE_LABEL: "", "node.kubernetes.io/exclude-from-external-load-balancers": "",
}
# Taints that keep pods off a node; PreferNoSchedule only lowers a node's score.
_HARD_EFFECTS = ("NoSchedule", "NoExecute")
WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet")
_ARCHS = {"amd64": "amd64", "x86_64": "amd64", "arm64": "arm64", "aarch64": "arm64"}
_SHOWN = 3  # node names shown in a message before "and N more"


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str = ""

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


CONTROL_PLANE_TAINT = Taint(CONTROL_PLANE_LABEL, "NoSchedule")


@dataclass(frozen=True)
class PlannedNode:
    """A node as it will be registered: its name, labels and taints, and its kind for messages."""

    name: str
    kind: str  # "control plane", "NPU worker" or "worker"
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()


def _base_labels(name: str, hostvars: Mapping[str, Any]) -> dict[str, str]:
    """What every kubelet registers with (K pkg/kubelet/kubelet_node_status.go `initialNode`)."""
    arch = _ARCHS.get(str(hostvars.get("kube_node_arch") or "amd64"), "amd64")
    return {"kubernetes.io/hostname": name.lower(), "kubernetes.io/os": "linux", "kubernetes.io/arch": arch}


def planned_nodes(
    groups: Mapping[str, Sequence[str]],
    hostvars: Mapping[str, Mapping[str, Any]],
    *,
    npu_taint: Mapping[str, Any],
    tor_label: str,
    host_arch: str = "huawei-arm",
) -> list[PlannedNode]:
    """Every node of the run, from the inventory: control planes as kubeadm marks them (plus the
    node-labels add-on's masterselector), workers as roles/kube_node registers and labels them."""
    control_planes = list(groups.get("kube_control_plane") or ())
    npu = set(groups.get("npu_node") or ())
    taint = Taint(str(npu_taint.get("key") or ""), str(npu_taint.get("effect") or ""),
                  str(npu_taint.get("value") or ""))
    nodes = []
    for host in control_planes:
        hv = hostvars.get(host) or {}
        master = node_labels(hv, True, False, host_arch)
        labels = {**_base_labels(host, hv), **_CONTROL_PLANE_LABELS, **master}
        nodes.append(PlannedNode(host, "control plane", labels, (CONTROL_PLANE_TAINT,)))
    for host in groups.get("kube_node") or ():
        if host in control_planes:
            continue
        hv = hostvars.get(host) or {}
        arch = str(hv.get("npu_host_arch") or hv.get("kube_node_host_arch")
                   or HOST_ARCH_LABELS.get(str(hv.get(ARCH_VAR))) or host_arch)
        extra = hv.get("kube_node_labels") if isinstance(hv.get("kube_node_labels"), Mapping) else {}
        labels = {**_base_labels(host, hv), **worker_labels(hv, host in npu, arch, tor_label, extra)}
        if host in npu:
            nodes.append(PlannedNode(host, "NPU worker", labels, (taint,) if taint.key else ()))
        else:
            nodes.append(PlannedNode(host, "worker", labels))
    return nodes


# ---- (a) CRDs -----------------------------------------------------------------------------------


def crd_problems(
    objects: Iterable[K8sObject],
    own_crds: Iterable[K8sObject],
    known_crds: Iterable[K8sObject],
    available: Collection[str],
    setting: str = "k8s_manifests_cluster_crds",
) -> list[Problem]:
    """A custom resource whose CRD is neither applied by this component (`own_crds`), nor among
    `available` (applied earlier in this deploy, or declared to be on the cluster already)."""
    own = list(own_crds)
    own_names = {o.name for o in own}
    by_kind: dict[tuple[str, str], K8sObject] = {}
    for crd in [*known_crds, *own]:
        kinds, _ = custom_kinds([crd])
        for key in kinds:
            by_kind[key] = crd
    problems = []
    for obj in objects:
        found = by_kind.get((obj.api_version, obj.kind))
        if found is None or obj.kind == CRD_KIND or found.name in own_names or found.name in available:
            continue
        problems.append(Problem(
            obj.source, obj.ref,
            f"its CRD {found.name} (from {found.source}) is applied by no earlier component of this deploy: "
            f"deploy the component that ships it first, or list {found.name} in {setting} if it is "
            "already on the cluster",
        ))
    return problems


# ---- (b) placement ------------------------------------------------------------------------------


def tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Taint) -> bool:
    """Whether any toleration matches the taint (empty effect: all effects; empty key + Exists: all)."""
    for tol in tolerations:
        effect = str(tol.get("effect") or "")
        if effect and effect != taint.effect:
            continue
        key, operator = str(tol.get("key") or ""), str(tol.get("operator") or "Equal")
        if not key:
            if operator == "Exists":
                return True
            continue
        if key == taint.key and (operator == "Exists" or str(tol.get("value") or "") == taint.value):
            return True
    return False


def _expression(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = str(expr.get("key") or ""), str(expr.get("operator") or "")
    values = [str(v) for v in expr.get("values") or []]
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator in ("Gt", "Lt") and key in labels and values:
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def selects(pod: Mapping[str, Any], node: PlannedNode) -> bool:
    """nodeSelector is a subset of the labels; required nodeSelectorTerms are ORed, expressions ANDed."""
    selector = pod.get("nodeSelector") or {}
    if any(node.labels.get(str(k)) != str(v) for k, v in selector.items()):
        return False
    required = (((pod.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    for term in terms:
        fields = [dict(e, key="kubernetes.io/hostname" if e.get("key") == "metadata.name" else e.get("key"))
                  for e in term.get("matchFields") or []]
        names = {**node.labels, "kubernetes.io/hostname": node.name}
        if all(_expression(e, names) for e in [*(term.get("matchExpressions") or []), *fields]):
            return True
    return False


def _one_per_node(pod: Mapping[str, Any], pod_labels: Mapping[str, str]) -> bool:
    """A required podAntiAffinity on kubernetes.io/hostname against the pod's own labels."""
    terms = (((pod.get("affinity") or {}).get("podAntiAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    for term in terms:
        match = ((term.get("labelSelector") or {}).get("matchLabels") or {})
        if term.get("topologyKey") == "kubernetes.io/hostname" and match and all(
            pod_labels.get(str(k)) == str(v) for k, v in match.items()
        ):
            return True
    return False


def _names(nodes: Sequence[PlannedNode]) -> str:
    """`3 control planes (cp1, cp2, cp3)`, `16000 NPU workers (npu00001, ... and 15997 more)`."""
    kinds = list(dict.fromkeys(n.kind for n in nodes))
    kind = kinds[0] if len(kinds) == 1 else "node"
    shown = ", ".join(n.name for n in nodes[:_SHOWN])
    more = f" and {len(nodes) - _SHOWN} more" if len(nodes) > _SHOWN else ""
    return f"{len(nodes)} {kind}{'' if len(nodes) == 1 else 's'} ({shown}{more})"


def _untolerated(tolerations: Sequence[Mapping[str, Any]], node: PlannedNode) -> list[Taint]:
    return [t for t in node.taints if t.effect in _HARD_EFFECTS and not tolerates(tolerations, t)]


def _selector_text(pod: Mapping[str, Any]) -> str:
    parts = []
    if pod.get("nodeSelector"):
        parts.append("nodeSelector " + ", ".join(f"{k}={v}" for k, v in pod["nodeSelector"].items()))
    affinity = (pod.get("affinity") or {}).get("nodeAffinity") or {}
    if affinity.get("requiredDuringSchedulingIgnoredDuringExecution"):
        parts.append("required nodeAffinity")
    return " and ".join(parts) or "no selector"


def _placement(obj: K8sObject, nodes: Sequence[PlannedNode]) -> str | None:
    spec = obj.body.get("spec") or {}
    template = spec.get("template") or {}
    pod = template.get("spec") or {}
    tolerations = pod.get("tolerations") or []
    selected = [n for n in nodes if selects(pod, n)]
    if not selected:
        return (f"{_selector_text(pod)} matches none of the run's {len(nodes)} nodes: label the nodes "
                "(inventory) or change the selector")
    blocked: dict[Taint, list[PlannedNode]] = {}
    fit = []
    for node in selected:
        taints = _untolerated(tolerations, node)
        for taint in taints:
            blocked.setdefault(taint, []).append(node)
        if not taints:
            fit.append(node)
    why = "; ".join(f"taint {taint} of {_names(on)} is not tolerated" for taint, on in blocked.items())
    if obj.kind == "DaemonSet":
        if not blocked:
            return None
        return f"would not run on {len(selected) - len(fit)} of the {len(selected)} nodes it selects: {why}"
    replicas = spec.get("replicas", 1)
    if not isinstance(replicas, int) or replicas < 1:
        return None
    if not fit:
        return f"no node fits: it selects {_names(selected)}, but {why}"
    if _one_per_node(pod, (template.get("metadata") or {}).get("labels") or {}) and len(fit) < replicas:
        return (f"{replicas} replicas, one per node (required podAntiAffinity on kubernetes.io/hostname), "
                f"but only {_names(fit)} fit" + (f" ({why})" if why else ""))
    return None


def placement_problems(objects: Iterable[K8sObject], nodes: Sequence[PlannedNode]) -> list[Problem]:
    """Every workload that cannot be placed on `nodes` (empty `nodes`: nothing to check against)."""
    if not nodes:
        return []
    problems = []
    for obj in objects:
        if obj.kind in WORKLOADS and obj.group == "apps":
            why = _placement(obj, nodes)
            if why:
                problems.append(Problem(obj.source, obj.ref, why))
    return problems


# ---- (c) label targets --------------------------------------------------------------------------


def label_target_problems(groups: Sequence[Mapping[str, Any]], nodes: Sequence[PlannedNode]) -> list[str]:
    """Nodes a label plan names that are not nodes of the run (kubectl label would fail NotFound)."""
    known = {n.name for n in nodes}
    named = [str(name) for g in groups for name in g.get("nodes") or []]
    missing = list(dict.fromkeys(name for name in named if name not in known))
    if not missing:
        return []
    more = f" and {len(missing) - _SHOWN} more" if len(missing) > _SHOWN else ""
    return [f"the label plan names {len(missing)} node(s) that are no kube_control_plane or kube_node "
            f"host of this run ({', '.join(missing[:_SHOWN])}{more}): a node registers under its inventory "
            "name, so npu_node_name must equal it"]
