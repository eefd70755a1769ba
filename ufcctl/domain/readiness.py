"""Whether a cluster works, from its API objects: Nodes Ready, the add-ons' workloads available, one summary.

The rules are Kubernetes' own, as `kubectl rollout status` applies them (kubernetes/kubectl
`pkg/polymorphichelpers/rollout_status.go`) and the node lifecycle controller reads a Node (condition
`Ready` = "True"); the objects are `kubectl get ... -o json` lists, read once per poll.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet")

# The namespaces ufcctl's add-on roles put workloads in (a unit test reads every role template and
# fails when a new one is missing here): kubeadm's CoreDNS and kube-proxy, Calico, NodeLocal DNS
# (kube-system), Volcano, MindCluster's components. The NFS provisioner's comes from the inventory
# (nfs_provisioner_namespace). Only these are judged, not every namespace: a deploy answers for what
# it installed, and a user's Deployment that cannot be placed (every NPU taken) must not fail a repair
# deploy of the platform nor turn `ufcctl health` red.
ADDON_NAMESPACES = frozenset({"kube-system", "volcano-system", "mindx-dl", "npu-exporter"})
NFS_NAMESPACE_DEFAULT = "nfs-system"  # roles/nfs_provisioner nfs_provisioner_namespace


@dataclass(frozen=True)
class Workload:
    namespace: str
    kind: str
    name: str
    ready: int  # pods available
    desired: int
    available: bool
    why: str  # what is missing, "" when available

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.kind}/{self.name} ready {self.ready}/{self.desired}"

    def to_json(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "kind": self.kind, "name": self.name, "ready": self.ready,
                "desired": self.desired, "available": self.available, "why": self.why}


@dataclass(frozen=True)
class Readiness:
    nodes: int  # Nodes listed
    not_ready: tuple[str, ...]  # their names, sorted
    workloads: int  # workloads judged (in the namespaces asked for)
    unavailable: tuple[Workload, ...]  # sorted by namespace, kind, name

    @property
    def ok(self) -> bool:
        return self.nodes > 0 and not self.not_ready and not self.unavailable

    def problems(self, shown: int = 5) -> list[str]:
        """One line per finding, each naming the first `shown` and counting the rest."""
        lines = []
        if self.nodes == 0:
            lines.append("no Node is registered")
        if self.not_ready:
            lines.append(f"{len(self.not_ready)} of {self.nodes} Node(s) NotReady: "
                         f"{first(self.not_ready, shown)}")
        if self.unavailable:
            lines.append(f"{len(self.unavailable)} of {self.workloads} workload(s) unavailable: "
                         f"{first((w.label for w in self.unavailable), shown)}")
        return lines

    def summary(self, shown: int = 5) -> str:
        """The whole state in one line."""
        return "; ".join(self.problems(shown)) or (
            f"{self.nodes} Node(s) Ready, {self.workloads} workload(s) available")

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "nodes": self.nodes, "not_ready": list(self.not_ready),
                "workloads": self.workloads, "unavailable": [w.to_json() for w in self.unavailable]}


@dataclass(frozen=True)
class ApiView:
    """What the API said through one kubeconfig: the last readiness read, or why none could be."""

    source: str  # the kubeconfig read
    readiness: Readiness | None  # None: no list was read
    error: str | None = None  # the last read failed (the API did not answer, kubectl failed): why
    seconds: float = 0.0  # how long deploy waited

    @property
    def ok(self) -> bool:
        return self.error is None and self.readiness is not None and self.readiness.ok

    def problems(self, shown: int = 5) -> list[str]:
        lines = self.readiness.problems(shown) if self.readiness is not None else []
        if self.error is not None:
            lines.append(f"the API did not answer through {self.source}: {self.error}")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "kubeconfig": self.source, "error": self.error,
                "seconds": round(self.seconds, 1),
                "readiness": self.readiness.to_json() if self.readiness is not None else None}


def node_ready(node: Mapping[str, Any]) -> bool:
    """The Node's `Ready` condition says "True" (Unknown, False or no condition: not Ready)."""
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
               for c in conditions)


def workload(obj: Mapping[str, Any]) -> Workload:
    """A Deployment, DaemonSet or StatefulSet judged as `kubectl rollout status` would find it done."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    kind = str(obj.get("kind", "?"))
    why = []
    # the controller has not seen the newest spec yet: every count below is about an older one
    if _int(meta, "generation") > _int(status, "observedGeneration"):
        why.append("the controller has not observed the newest spec")
    if kind == "DaemonSet":
        desired = _int(status, "desiredNumberScheduled")
        ready = _int(status, "numberAvailable")
        rolling = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
        if rolling and _int(status, "updatedNumberScheduled") < desired:
            why.append(f"{_int(status, 'updatedNumberScheduled')} of {desired} updated")
    else:
        desired = _int(spec, "replicas", 1)
        if kind == "Deployment":
            ready = _int(status, "availableReplicas")
            updated = _int(status, "updatedReplicas")
            if updated < desired:
                why.append(f"{updated} of {desired} updated")
            elif _int(status, "replicas") > updated:
                why.append(f"{_int(status, 'replicas') - updated} old replica(s) pending termination")
        else:
            # availableReplicas (minReadySeconds counted) is filled from 1.25 on; readyReplicas before
            ready = min(_int(status, "readyReplicas"), _int(status, "availableReplicas",
                                                             _int(status, "readyReplicas")))
            rolling = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
            partition = _int((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}, "partition")
            if rolling and _int(status, "updatedReplicas") < desired - partition:
                why.append(f"{_int(status, 'updatedReplicas')} of {desired - partition} updated")
    if ready < desired:
        why.append(f"{ready} of {desired} available")
    return Workload(str(meta.get("namespace", "")), kind, str(meta.get("name", "?")), ready, desired,
                    not why, "; ".join(why))


def readiness(nodes: Mapping[str, Any], workloads: Mapping[str, Any],
              namespaces: Collection[str] | None) -> Readiness:
    """The verdict from a Node list and a workload list (`kind: List` of the three kinds); `namespaces`
    None judges every namespace."""
    node_items = _items(nodes)
    not_ready = sorted(str((n.get("metadata") or {}).get("name", "?")) for n in node_items
                       if not node_ready(n))
    judged = [workload(o) for o in _items(workloads) if o.get("kind") in WORKLOAD_KINDS
              and (namespaces is None or (o.get("metadata") or {}).get("namespace") in namespaces)]
    unavailable = sorted((w for w in judged if not w.available), key=lambda w: (w.namespace, w.kind, w.name))
    return Readiness(len(node_items), tuple(not_ready), len(judged), tuple(unavailable))


def addon_namespaces(nfs_namespace: str | None) -> frozenset[str]:
    return ADDON_NAMESPACES | {nfs_namespace or NFS_NAMESPACE_DEFAULT}


def first(items: Iterable[str], shown: int = 5) -> str:
    """At most `shown` items and how many more: one line, also on 16,000 nodes."""
    listed = list(items)
    more = f" and {len(listed) - shown} more" if len(listed) > shown else ""
    return ", ".join(listed[:shown]) + more


def _items(listing: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [i for i in (listing.get("items") or []) if isinstance(i, Mapping)]


def _int(section: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = section.get(key)
    if value is None or isinstance(value, bool):
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
