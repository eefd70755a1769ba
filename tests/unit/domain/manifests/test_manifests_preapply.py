"""Checks before apply: tolerations and selectors as kube-scheduler matches them, workloads placed on
the run's nodes, custom resources whose CRD nobody applies, label plans naming unknown nodes."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from ufcctl.domain.manifests.objects import K8sObject, parse_manifest
from ufcctl.domain.manifests.preapply import (
    CONTROL_PLANE_TAINT,
    PlannedNode,
    Taint,
    crd_problems,
    label_target_problems,
    placement_problems,
    planned_nodes,
    selects,
    tolerates,
)

NPU_TAINT = {"key": "ufcctl.io/npu-health-pending", "value": "true", "effect": "NoSchedule"}
GROUPS = {"kube_control_plane": ["cp1", "cp2", "cp3"], "kube_node": ["npu1", "npu2", "cpu1"],
          "npu_node": ["npu1", "npu2"]}
HOSTVARS: dict[str, dict[str, Any]] = {
    "npu1": {"npu_accelerator_type": "module-910b-8", "npu_tor_id": "t1"},
    "npu2": {"npu_accelerator_type": "module-910b-8", "npu_tor_id": "t2"},
}
NODES = planned_nodes(GROUPS, HOSTVARS, npu_taint=NPU_TAINT, tor_label="npu-tor-id")
PENDING = Taint("ufcctl.io/npu-health-pending", "NoSchedule", "true")


def test_the_run_s_nodes_carry_what_kubeadm_and_kube_node_give_them() -> None:
    by_name = {n.name: n for n in NODES}
    assert [n.name for n in NODES] == ["cp1", "cp2", "cp3", "npu1", "npu2", "cpu1"]
    cp = by_name["cp1"]
    assert cp.taints == (CONTROL_PLANE_TAINT,)
    assert cp.labels["node-role.kubernetes.io/control-plane"] == ""
    assert cp.labels["masterselector"] == "dls-master-node"
    npu = by_name["npu1"]
    assert npu.taints == (PENDING,) and npu.kind == "NPU worker"
    assert npu.labels["workerselector"] == "dls-worker-node" and npu.labels["npu-tor-id"] == "t1"
    assert npu.labels["node-role.kubernetes.io/worker"] == "worker"
    assert by_name["cpu1"].taints == () and "workerselector" not in by_name["cpu1"].labels


@pytest.mark.parametrize(
    ("toleration", "taint", "ok"),
    [
        pytest.param({"operator": "Exists"}, PENDING, True, id="empty-key-exists-tolerates-all"),
        pytest.param({"operator": "Exists", "effect": "NoExecute"}, PENDING, False, id="other-effect"),
        pytest.param({"key": PENDING.key, "operator": "Exists"}, PENDING, True, id="key-any-effect"),
        pytest.param({"key": PENDING.key, "value": "true", "effect": "NoSchedule"}, PENDING, True,
                     id="equal-by-default"),
        pytest.param({"key": PENDING.key, "value": "false"}, PENDING, False, id="equal-other-value"),
        pytest.param({"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                      "effect": "NoSchedule"}, CONTROL_PLANE_TAINT, True, id="control-plane"),
        pytest.param({"key": "CriticalAddonsOnly", "operator": "Exists"}, CONTROL_PLANE_TAINT, False,
                     id="other-key"),
        pytest.param({"value": "x"}, PENDING, False, id="empty-key-equal-matches-nothing"),
    ],
)
def test_tolerations_match_as_kube_scheduler_does(toleration: dict[str, str], taint: Taint,
                                                   ok: bool) -> None:
    assert tolerates([toleration], taint) is ok


NODE = PlannedNode("n1", "worker", {"zone": "a", "gpu": "2", "kubernetes.io/hostname": "n1"})


def _required(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    """A pod spec with required node affinity: one term per list of match expressions."""
    required = {"nodeSelectorTerms": [{"matchExpressions": list(term)} for term in terms]}
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}}


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


@pytest.mark.parametrize(
    ("pod", "ok"),
    [
        pytest.param({}, True, id="no-selector"),
        pytest.param({"nodeSelector": {"zone": "a"}}, True, id="selector-subset"),
        pytest.param({"nodeSelector": {"zone": "b"}}, False, id="selector-other-value"),
        pytest.param(_required([_expr("zone", "In", "b")], [_expr("gpu", "Gt", "1")]), True,
                     id="terms-are-ored"),
        pytest.param(_required([_expr("zone", "Exists"), _expr("servertype", "In", "soc")]), False,
                     id="expressions-are-anded"),
        pytest.param(_required([_expr("servertype", "NotIn", "soc"), _expr("absent", "DoesNotExist")]), True,
                     id="notin-and-doesnotexist-hold-for-missing-labels"),
    ],
)
def test_selectors_match_as_kube_scheduler_does(pod: dict[str, Any], ok: bool) -> None:
    assert selects(pod, NODE) is ok


def _workload(kind: str, pod: dict[str, Any], replicas: int | None = None, labels: Any = None) -> K8sObject:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "x"}},
                            "template": {"metadata": {"labels": labels or {"app": "x"}}, "spec": pod}}
    if replicas is not None:
        spec["replicas"] = replicas
    meta = {"name": "x", "namespace": "ns"}
    body = {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}
    return K8sObject("10-x.yaml", 0, body)


MASTERS = {"nodeSelector": {"masterselector": "dls-master-node"}}
CP_TOLERATION = {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
WORKERS = {"nodeSelector": {"workerselector": "dls-worker-node"}}
ONE_PER_NODE = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        pytest.param(_workload("Deployment", MASTERS), [
            "10-x.yaml: Deployment/ns/x: no node fits: it selects 3 control planes (cp1, cp2, cp3), "
            "but taint node-role.kubernetes.io/control-plane:NoSchedule of 3 control planes (cp1, cp2, cp3) "
            "is not tolerated"
        ], id="control-plane-workload-without-toleration"),
        pytest.param(_workload("Deployment", {**MASTERS, "tolerations": [CP_TOLERATION]}), [],
                     id="control-plane-workload-tolerating"),
        pytest.param(_workload("Deployment", {**MASTERS, "tolerations": [CP_TOLERATION],
                                              "affinity": ONE_PER_NODE}, replicas=4), [
            "10-x.yaml: Deployment/ns/x: 4 replicas, one per node (required podAntiAffinity on "
            "kubernetes.io/hostname), but only 3 control planes (cp1, cp2, cp3) fit"
        ], id="more-spread-replicas-than-nodes"),
        pytest.param(_workload("Deployment", {**MASTERS, "affinity": ONE_PER_NODE}, replicas=0), [],
                     id="zero-replicas"),
        pytest.param(_workload("DaemonSet", WORKERS), [
            "10-x.yaml: DaemonSet/ns/x: would not run on 2 of the 2 nodes it selects: taint "
            "ufcctl.io/npu-health-pending=true:NoSchedule of 2 NPU workers (npu1, npu2) is not tolerated"
        ], id="worker-daemonset-without-npu-toleration"),
        pytest.param(_workload("DaemonSet", {**WORKERS, "tolerations": [
            {"key": "ufcctl.io/npu-health-pending", "operator": "Exists", "effect": "NoSchedule"}]}), [],
                     id="worker-daemonset-tolerating"),
        pytest.param(_workload("DaemonSet", {"tolerations": [{"operator": "Exists"}]}), [],
                     id="tolerate-everything"),
        pytest.param(_workload("StatefulSet", {"nodeSelector": {"disktype": "ssd"}}), [
            "10-x.yaml: StatefulSet/ns/x: nodeSelector disktype=ssd matches none of the run's 6 nodes: "
            "label the nodes (inventory) or change the selector"
        ], id="selector-nothing-matches"),
    ],
)
def test_placement_names_workload_node_set_and_taint(workload: K8sObject, expected: list[str]) -> None:
    assert [str(p) for p in placement_problems([workload], NODES)] == expected


def _objects(text: str, source: str) -> list[K8sObject]:
    return parse_manifest(text, source)[0]


CRD = yaml.safe_dump({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "queues.scheduling.volcano.sh"},
    "spec": {"group": "scheduling.volcano.sh", "scope": "Cluster",
             "names": {"kind": "Queue", "plural": "queues"},
             "versions": [{"name": "v1beta1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object"}}}]},
})
QUEUE = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"


@pytest.mark.parametrize(
    ("own", "available", "problems"),
    [
        pytest.param(True, (), 0, id="applied-by-this-component"),
        pytest.param(False, ("queues.scheduling.volcano.sh",), 0, id="applied-earlier-or-on-the-cluster"),
        pytest.param(False, (), 1, id="nobody-applies-it"),
    ],
)
def test_a_custom_resource_needs_its_crd_applied(own: bool, available: tuple[str, ...],
                                                  problems: int) -> None:
    crd = _objects(CRD, "scheduling.volcano.sh_queues.yaml")
    found = crd_problems(_objects(QUEUE, "30-queues.yaml"), crd if own else [], crd, available)
    assert len(found) == problems
    if problems:
        assert str(found[0]) == (
            "30-queues.yaml: Queue/q: its CRD queues.scheduling.volcano.sh "
            "(from scheduling.volcano.sh_queues.yaml) is applied by no earlier component of this deploy: "
            "deploy the component that ships it first, or "
            "list queues.scheduling.volcano.sh in k8s_manifests_cluster_crds if it is already on the cluster"
        )


def test_a_label_plan_may_name_only_nodes_of_the_run() -> None:
    assert label_target_problems([{"nodes": ["cp1", "cp2"]}], NODES) == []
    (problem,) = label_target_problems([{"nodes": ["cp1", "master-1"]}, {"nodes": ["npu9"]}], NODES)
    assert "names 2 node(s)" in problem and "(master-1, npu9)" in problem and "npu_node_name" in problem
