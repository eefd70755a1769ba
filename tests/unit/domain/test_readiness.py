"""What counts as a Ready Node and an available workload (Kubernetes' rules), the one-line summary, and
the add-on namespaces against every role template."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ufcctl.domain.readiness import (
    ADDON_NAMESPACES,
    NFS_NAMESPACE_DEFAULT,
    ApiView,
    addon_namespaces,
    node_ready,
    readiness,
    workload,
)

ROLES = Path(__file__).resolve().parents[3] / "roles"


def node(name: str, status: str | None = "True", kind: str = "Ready") -> dict[str, Any]:
    conditions = [] if status is None else [{"type": "MemoryPressure", "status": "False"},
                                            {"type": kind, "status": status}]
    return {"kind": "Node", "metadata": {"name": name}, "status": {"conditions": conditions}}


def deployment(name: str = "coredns", ns: str = "kube-system", want: int | None = 2,
               generation: int = 1, **status: int) -> dict[str, Any]:
    spec = {} if want is None else {"replicas": want}
    return {"kind": "Deployment", "metadata": {"name": name, "namespace": ns, "generation": generation},
            "spec": spec, "status": {"observedGeneration": 1, **status}}


def daemonset(name: str = "calico-node", ns: str = "kube-system", strategy: str = "RollingUpdate",
              **status: int) -> dict[str, Any]:
    return {"kind": "DaemonSet", "metadata": {"name": name, "namespace": ns, "generation": 1},
            "spec": {"updateStrategy": {"type": strategy}}, "status": {"observedGeneration": 1, **status}}


def statefulset(name: str = "web", ns: str = "kube-system", replicas: int = 3, partition: int = 0,
                **status: int) -> dict[str, Any]:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}}
    return {"kind": "StatefulSet", "metadata": {"name": name, "namespace": ns, "generation": 1},
            "spec": {"replicas": replicas, "updateStrategy": strategy},
            "status": {"observedGeneration": 1, **status}}


@pytest.mark.parametrize(("obj", "ready"), [
    pytest.param(node("n1"), True, id="ready-true"),
    pytest.param(node("n1", "False"), False, id="ready-false"),
    pytest.param(node("n1", "Unknown"), False, id="ready-unknown"),
    pytest.param(node("n1", None), False, id="no-conditions"),
    pytest.param(node("n1", "True", kind="NetworkUnavailable"), False, id="other-condition-true"),
    pytest.param({"metadata": {"name": "n1"}}, False, id="no-status"),
])
def test_a_node_is_ready_only_when_its_ready_condition_is_true(obj: dict[str, Any], ready: bool) -> None:
    assert node_ready(obj) is ready


FULL = {"replicas": 2, "updatedReplicas": 2, "availableReplicas": 2, "readyReplicas": 2}
DS_FULL = {"desiredNumberScheduled": 9, "updatedNumberScheduled": 9, "numberAvailable": 9, "numberReady": 9}


@pytest.mark.parametrize(("obj", "available", "shown", "why"), [
    pytest.param(deployment(**FULL), True, "2/2", "", id="deployment-available"),
    pytest.param(deployment(**{**FULL, "availableReplicas": 1}), False, "1/2", "1 of 2 available",
                 id="deployment-one-unavailable"),
    pytest.param(deployment(**{**FULL, "updatedReplicas": 1}), False, "2/2", "1 of 2 updated",
                 id="deployment-rolling"),
    pytest.param(deployment(**{**FULL, "replicas": 3}), False, "2/2", "1 old replica(s) pending termination",
                 id="deployment-old-replica-left"),
    pytest.param(deployment(generation=2, **FULL), False, "2/2",
                 "the controller has not observed the newest spec", id="deployment-generation-unobserved"),
    pytest.param(deployment(want=None), False, "0/1", "0 of 1 updated; 0 of 1 available",
                 id="deployment-replicas-default-1"),
    pytest.param(deployment(want=0), True, "0/0", "", id="deployment-scaled-to-zero"),
    pytest.param(daemonset(**DS_FULL), True, "9/9", "", id="daemonset-available"),
    pytest.param(daemonset(**{**DS_FULL, "numberAvailable": 7}), False, "7/9", "7 of 9 available",
                 id="daemonset-two-unavailable"),
    pytest.param(daemonset(**{**DS_FULL, "updatedNumberScheduled": 5}), False, "9/9", "5 of 9 updated",
                 id="daemonset-rolling"),
    pytest.param(daemonset(strategy="OnDelete", **{**DS_FULL, "updatedNumberScheduled": 5}), True, "9/9", "",
                 id="daemonset-ondelete-old-pods-are-fine"),
    pytest.param(daemonset(desiredNumberScheduled=0), True, "0/0", "", id="daemonset-no-node-selected"),
    pytest.param(statefulset(readyReplicas=3, availableReplicas=3, updatedReplicas=3), True, "3/3", "",
                 id="statefulset-available"),
    pytest.param(statefulset(readyReplicas=3, availableReplicas=2, updatedReplicas=3), False, "2/3",
                 "2 of 3 available", id="statefulset-ready-not-yet-available"),
    pytest.param(statefulset(readyReplicas=3, updatedReplicas=3), True, "3/3", "",
                 id="statefulset-before-availablereplicas"),
    pytest.param(statefulset(readyReplicas=3, availableReplicas=3, updatedReplicas=1), False, "3/3",
                 "1 of 3 updated", id="statefulset-rolling"),
    pytest.param(statefulset(partition=2, readyReplicas=3, availableReplicas=3, updatedReplicas=1), True,
                 "3/3", "", id="statefulset-partition-held"),
])
def test_a_workload_is_available_as_kubectl_rollout_status_judges_it(
        obj: dict[str, Any], available: bool, shown: str, why: str) -> None:
    found = workload(obj)
    assert found.available is available
    assert f"{found.ready}/{found.desired}" == shown
    assert found.why == why


def listing(*items: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "List", "items": list(items)}


def test_readiness_names_not_ready_nodes_and_unavailable_workloads_of_the_namespaces_asked() -> None:
    nodes = listing(node("w2", "False"), node("cp1"), node("w1", "Unknown"))
    workloads = listing(
        daemonset(**{**DS_FULL, "numberAvailable": 1}),
        deployment("volcano-scheduler", "volcano-system", want=1, updatedReplicas=1, availableReplicas=0),
        deployment("web", "user-team", want=1),  # not an add-on namespace: not judged
        deployment(**FULL),
    )
    found = readiness(nodes, workloads, ADDON_NAMESPACES)
    assert (found.nodes, found.not_ready, found.workloads) == (3, ("w1", "w2"), 3)
    assert [w.label for w in found.unavailable] == [
        "kube-system/DaemonSet/calico-node ready 1/9",
        "volcano-system/Deployment/volcano-scheduler ready 0/1"]
    assert not found.ok
    assert found.summary() == ("2 of 3 Node(s) NotReady: w1, w2; 2 of 3 workload(s) unavailable: "
                               "kube-system/DaemonSet/calico-node ready 1/9, "
                               "volcano-system/Deployment/volcano-scheduler ready 0/1")
    every = readiness(nodes, workloads, None)
    assert every.workloads == 4 and len(every.unavailable) == 3


def test_a_healthy_cluster_is_ok_and_says_so_in_one_line() -> None:
    found = readiness(listing(node("cp1"), node("w1")), listing(deployment(**FULL)), ADDON_NAMESPACES)
    assert found.ok and found.problems() == []
    assert found.summary() == "2 Node(s) Ready, 1 workload(s) available"


def test_no_node_is_not_ok() -> None:
    found = readiness(listing(), listing(), ADDON_NAMESPACES)
    assert not found.ok and found.summary() == "no Node is registered"


def test_the_summary_names_the_first_few_and_counts_the_rest() -> None:
    nodes = listing(*(node(f"w{i:05d}", "False") for i in range(16_000)))
    line = readiness(nodes, listing(), ADDON_NAMESPACES).summary(shown=3)
    assert line == "16000 of 16000 Node(s) NotReady: w00000, w00001, w00002 and 15997 more"


def test_an_api_view_with_an_error_is_not_ok_and_says_through_what() -> None:
    view = ApiView("/root/admin.conf", None, "kubectl get nodes failed (rc 1): connection refused")
    assert not view.ok
    assert view.problems() == ["the API did not answer through /root/admin.conf: kubectl get nodes failed "
                               "(rc 1): connection refused"]
    ok = ApiView("/kc", readiness(listing(node("cp1")), listing(), None))
    assert ok.ok and ok.to_json()["readiness"]["nodes"] == 1


def test_the_nfs_namespace_comes_from_the_inventory_or_the_role_default() -> None:
    assert addon_namespaces(None) == ADDON_NAMESPACES | {NFS_NAMESPACE_DEFAULT}
    storage = addon_namespaces("storage")
    assert "storage" in storage and NFS_NAMESPACE_DEFAULT not in storage
    default = (ROLES / "nfs_provisioner" / "defaults" / "main.yml").read_text()
    assert f"nfs_provisioner_namespace: {NFS_NAMESPACE_DEFAULT}\n" in default


def test_every_namespace_a_role_template_names_is_an_addon_namespace() -> None:
    """A role that puts a workload into a new namespace must add it here, or deploy would not wait for it."""
    named = set()
    for template in ROLES.glob("*/templates/**/*.j2"):
        named |= set(re.findall(r"^\s*namespace:\s*([a-z0-9-]+)\s*$", template.read_text(), re.MULTILINE))
    assert named  # the pattern still finds them
    assert named <= ADDON_NAMESPACES, sorted(named - ADDON_NAMESPACES)
