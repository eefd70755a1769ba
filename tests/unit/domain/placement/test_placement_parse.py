"""Reading Kubernetes objects: job identity and settings, Lists, ignored kinds, unreadable input."""

from __future__ import annotations

import copy
import json

import pytest
from placement_kube import acjob, codes, configmap, device_info, node, pod, podgroup, run, tor

from ufcctl.domain.placement import ParseError, validate, validate_documents

B8 = "module-910b-8"


def test_list_and_single_objects_give_the_same_report() -> None:
    objects = [node("n1", "module"), pod("p", chips=[3, 4], on="n1", job="j")]
    listed = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": objects}
    typed = {"apiVersion": "v1", "kind": "PodList", "items": objects[1:]}
    assert run([listed]).to_dict() == run(objects).to_dict() == run([objects[0], typed]).to_dict()
    assert [v.code.value for v in run(objects).violations] == ["HCCS_RING"]


def test_other_kinds_are_ignored() -> None:
    objects = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "s"},
            "spec": {"ports": "not even a list"},
        },
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "vj"}},
        {"apiVersion": "example.com/v1", "kind": "PodGroup", "metadata": {"name": "foreign"}, "spec": "x"},
        configmap("unrelated", "default", {"k": "v"}),
    ]
    assert run(objects).to_dict() == {
        "valid": True,
        "checked": {"nodes": 0, "pods": 0, "jobs": 0},
        "violations": [],
    }


def test_checked_counts() -> None:
    objects = [
        node("n1", B8),
        node("m", B8),
        pod("a", chips=[0], on="n1", job="j", selector=B8),
        pod("launcher", on="n1", job="j"),
        pod("coredns", on="n1"),
        pod("solo", chips=[1], on="n1", selector=B8),
        pod("cpu-job-pod", on="n1", job="cpu"),
    ]
    # Pods of NPU jobs (a and its launcher) and the standalone NPU pod; not coredns, not the CPU job.
    assert run(objects).to_dict()["checked"] == {"nodes": 2, "pods": 3, "jobs": 2}


JOB_IDENTITY_CASES = [
    # (pods' identities, expected job refs in the report)
    pytest.param([{"group": "pg"}, {"group": "pg"}], ["default/pg"], id="podgroup-annotation"),
    pytest.param([{"owner": "aj"}, {"owner": "aj"}], ["default/aj"], id="ascendjob-owner"),
    pytest.param([{"job": "bj"}, {"job": "bj"}], ["default/bj"], id="job-name-label"),
    pytest.param([{"group": "pg", "owner": "aj", "job": "bj"}], ["default/pg"], id="annotation-wins"),
    pytest.param([{"owner": "aj", "job": "bj"}], ["default/aj"], id="owner-beats-label"),
    pytest.param([{}], [None], id="standalone-pod-has-no-job"),
]


@pytest.mark.parametrize(("identities", "expected"), JOB_IDENTITY_CASES)
def test_job_identity(identities: list[dict], expected: list[str | None]) -> None:
    # Every pod requests 3 chips on `module`: one CHIP_COUNT per pod names the job it was grouped into.
    objects = [pod(f"p{i}", request=3, **ident) for i, ident in enumerate(identities)]
    report = run(objects)
    assert sorted({v.job for v in report.violations}, key=str) == expected
    assert report.checked.jobs == len(expected)


def test_podgroup_owned_by_ascendjob_joins_both_routes() -> None:
    """Pods with the PodGroup annotation and pods owned by the AscendJob are one job (gang of 3)."""
    objects = [
        node("n1", B8),
        acjob("train", {"Worker": (3, 1, B8)}),
        podgroup("train-pg", 3, owner="train"),
        pod("a", chips=[0], on="n1", group="train-pg", selector=B8),
        pod("b", chips=[1], on="n1", owner="train", selector=B8),
        pod("c", chips=[2], on="n1", owner="train", selector=B8),
    ]
    report = run(objects)
    assert report.violations == ()
    assert report.checked.jobs == 1


def test_ascendjob_numbers_win_over_pods() -> None:
    """Single vs multi-pod comes from the AscendJob's replicas even when only one pod exists yet."""
    objects = [
        acjob("j", {"Worker": (2, 1, "module-a3-16")}),
        pod("j-0", request=1, owner="j", selector="module-a3-16"),
    ]
    assert codes(objects) == ["CHIP_COUNT"]  # 1 chip is allowed only for a single-pod A3 job
    alone = [
        acjob("j", {"Worker": (1, 1, "module-a3-16")}),
        pod("j-0", request=1, owner="j", selector="module-a3-16"),
    ]
    assert codes(alone) == []


def test_failed_pod_does_not_make_a_job_multi_pod() -> None:
    objects = [
        pod("j-0", request=1, job="j", selector="module-a3-16", phase="Failed"),
        pod("j-1", request=1, job="j", selector="module-a3-16"),
    ]
    assert codes(objects) == []


def test_requests_sum_over_containers_and_ignore_sidecars() -> None:
    obj = pod("p", request=2, job="j", selector="module")
    obj["spec"]["containers"].append(
        {"name": "side", "resources": {"requests": {"huawei.com/Ascend910": "1"}}}
    )
    obj["spec"]["containers"].append({"name": "log", "resources": {"requests": {"cpu": "100m"}}})
    assert codes([obj]) == ["CHIP_COUNT"]  # 3 chips


def test_integer_quantities_from_yaml_are_accepted() -> None:
    obj = pod("p", request=2, job="j")
    obj["spec"]["containers"][0]["resources"]["requests"]["huawei.com/Ascend910"] = 2
    assert codes([obj]) == []


def test_tor_configmap_outside_kube_system_does_not_count() -> None:
    cm = tor({0: ["n1"]})
    cm["metadata"]["namespace"] = "volcano-system"
    objects = [
        node("n1", B8),
        cm,
        podgroup("j", 1, labels={"tor-affinity": "normal-schema"}),
        pod("p", chips=[0], on="n1", group="j", selector=B8),
    ]
    assert codes(objects) == ["TOR_CM_MISSING"]


def good_pod() -> dict:
    return pod("p", chips=[0, 1], on="n1", job="j", selector=B8, rank=0)


def broken(path: str, value: object, base: dict | None = None) -> dict:
    obj = copy.deepcopy(base or good_pod())
    *parents, last = path.split(".")
    target = obj
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return obj


PARSE_ERROR_CASES = [
    pytest.param(
        broken("spec.containers.0.resources.requests", {"huawei.com/Ascend910": {"n": 2}}),
        "Pod default/p",
        "resources.requests[huawei.com/Ascend910] must be an integer, got a mapping",
        id="request-is-an-object",
    ),
    pytest.param(
        broken("spec.containers.0.resources.requests", {"huawei.com/Ascend910": "two"}),
        "Pod default/p",
        "must be an integer, got 'two'",
        id="request-not-a-number",
    ),
    pytest.param(
        broken("spec.containers.0.resources.requests", {"huawei.com/Ascend910": "-1"}),
        "Pod default/p",
        "is negative",
        id="request-negative",
    ),
    pytest.param(
        broken("spec.containers", {"name": "x"}),
        "Pod default/p",
        "spec.containers must be a list",
        id="containers-not-a-list",
    ),
    pytest.param(
        broken("metadata.labels", ["a"]),
        "Pod default/p",
        "metadata.labels must be a mapping",
        id="labels-a-list",
    ),
    pytest.param(
        broken("metadata.annotations", {"huawei.com/Ascend910": ["Ascend910-0"]}),
        "Pod default/p",
        "annotation huawei.com/Ascend910 must be a string",
        id="allocation-a-list",
    ),
    pytest.param(
        broken("metadata.annotations", {"hccl/rankIndex": "first"}),
        "Pod default/p",
        "annotation hccl/rankIndex must be an integer",
        id="rank-index-not-a-number",
    ),
    pytest.param(
        broken("spec.nodeName", 7), "Pod default/p", "spec.nodeName must be a string", id="node-name-number"
    ),
    pytest.param(
        broken("metadata.name", ""),
        "Pod at document 1",
        "metadata.name must be a non-empty string",
        id="pod-without-name",
    ),
    pytest.param(
        broken("metadata", "p"), "Pod at document 1", "metadata must be a mapping", id="metadata-a-string"
    ),
    pytest.param(
        broken("metadata.annotations", {"superPodID": "zero"}, node("n1", B8)),
        "Node n1",
        "annotation superPodID must be an integer",
        id="super-pod-id-not-a-number",
    ),
    pytest.param(
        broken("status.addresses", {"type": "InternalIP"}, node("n1", B8)),
        "Node n1",
        "status.addresses must be a list",
        id="addresses-not-a-list",
    ),
    pytest.param(
        configmap("mindx-dl-deviceinfo-n1", "kube-system", {"DeviceInfoCfg": "{not json"}),
        "ConfigMap kube-system/mindx-dl-deviceinfo-n1",
        "data[DeviceInfoCfg] is not valid JSON",
        id="device-info-not-json",
    ),
    pytest.param(
        configmap(
            "mindx-dl-deviceinfo-n1",
            "kube-system",
            {
                "DeviceInfoCfg": json.dumps(
                    {"DeviceInfo": {"DeviceList": {"huawei.com/Ascend910-Unhealthy": "npu3"}}}
                )
            },
        ),
        "ConfigMap kube-system/mindx-dl-deviceinfo-n1",
        "'npu3' is not a chip name",
        id="unhealthy-bad-name",
    ),
    pytest.param(
        configmap("basic-tor-node-cm", "kube-system", {"tor_info": json.dumps({"server_list": {}})}),
        "ConfigMap kube-system/basic-tor-node-cm",
        "server_list must be a list",
        id="tor-server-list",
    ),
    pytest.param(
        configmap("rings-config-j", "default", {"hccl.json": "[1, 2]"}),
        "ConfigMap default/rings-config-j",
        "must be a JSON object, got a list",
        id="rank-table-a-list",
    ),
    pytest.param(
        configmap("rings-config-x", "default", {}) | {"data": "oops"},
        "ConfigMap default/rings-config-x",
        "data must be a mapping",
        id="configmap-data-string",
    ),
    pytest.param(
        configmap("rings-config-x", "default", {"hccl.json": 5}),
        "ConfigMap default/rings-config-x",
        "data[hccl.json] must be a string",
        id="configmap-value-number",
    ),
    pytest.param(
        broken("spec.replicaSpecs.Worker.replicas", "many", acjob("j", {"Worker": (1, 8, B8)})),
        "AscendJob default/j",
        "spec.replicaSpecs.Worker.replicas must be an integer",
        id="replicas-word",
    ),
    pytest.param(
        broken("spec.minMember", "3x", podgroup("j", 1)),
        "PodGroup default/j",
        "spec.minMember must be an integer",
        id="min-member-word",
    ),
    pytest.param(["not", "an", "object"], "document 1", "not a Kubernetes object", id="top-level-array"),
    pytest.param(
        {"metadata": {"name": "x"}}, "document 1", "not a Kubernetes object (no `kind`)", id="no-kind"
    ),
    pytest.param(
        {"kind": "List", "items": {"a": 1}}, "document 1", "List.items must be a list", id="items-not-list"
    ),
    pytest.param(
        {"kind": "List", "items": [1]},
        "document 1 items[0]",
        "not a Kubernetes object",
        id="list-item-a-number",
    ),
]


@pytest.mark.parametrize(("obj", "subject", "problem"), PARSE_ERROR_CASES)
def test_unreadable_object_raises_parse_error_naming_it(obj: object, subject: str, problem: str) -> None:
    with pytest.raises(ParseError) as info:
        validate_documents([("snap.json", obj)])
    err = info.value
    assert err.subject == subject
    assert problem in err.problem
    assert str(err).startswith(f"snap.json: {subject}: ")
    assert "\n" not in str(err)


def test_unknown_node_type_is_an_error_only_under_an_npu_pod() -> None:
    objects = [node("infer-1", "card-910b-infer", npu=False), node("n1", B8)]
    objects[0]["metadata"]["labels"]["accelerator-type"] = "card-910b-infer"
    assert validate(objects).valid
    with pytest.raises(
        ParseError, match="Node infer-1: label accelerator-type 'card-910b-infer' names no known"
    ):
        validate([*objects, pod("p", chips=[0], on="infer-1", job="j")])


def test_unknown_selector_is_an_error_naming_the_job_object() -> None:
    with pytest.raises(
        ParseError, match=r"AscendJob default/j: nodeSelector unknown accelerator-type 'module-910c'"
    ):
        validate([acjob("j", {"Worker": (1, 8, "module-910c")})])
    with pytest.raises(ParseError, match=r"Pod default/p: nodeSelector unknown accelerator-type"):
        validate([pod("p", request=1, selector="bogus")])


def test_configmaps_the_rules_do_not_read_are_not_parsed() -> None:
    assert validate([configmap("x", "default", {}) | {"data": "oops"}]).valid


def test_device_info_and_unrelated_configmaps_parse() -> None:
    objects = [
        node("n1", B8),
        device_info("n1", unhealthy=[]),
        configmap("mindx-dl-deviceinfo-x", "default", {}),
        pod("p", chips=[0], on="n1", job="j", selector=B8),
    ]
    assert validate(objects).violations == ()


def test_limits_stand_in_for_missing_requests() -> None:
    """Kubernetes defaults an extended resource's request to its limit; a job file may carry limits only."""
    obj = acjob("j", {"Worker": (1, 3, "module")})
    container = obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    del container["resources"]["requests"]
    assert codes([obj]) == ["CHIP_COUNT"]


def test_objects_given_twice_count_once() -> None:
    """Overlapping files (nodes.json and all.json) must not make a pod conflict with itself."""
    objects = [node("n1", B8), pod("p", chips=[0, 1], on="n1", job="j", selector=B8)]
    report = validate_documents([("a.json", obj) for obj in objects] + [("b.json", obj) for obj in objects])
    assert report.violations == ()
    assert report.to_dict()["checked"] == {"nodes": 1, "pods": 1, "jobs": 1}


def test_unknown_hardware_error_carries_a_hint() -> None:
    with pytest.raises(ParseError) as info:
        validate([acjob("j", {"Worker": (1, 8, "card-910b-infer")})])
    assert info.value.hint is not None and "profiles.py" in info.value.hint
