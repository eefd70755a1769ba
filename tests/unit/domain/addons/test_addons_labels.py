"""Node label plan: MindCluster's labels from topology vars, grouped into few kubectl calls."""

from __future__ import annotations

import pytest

from ufcctl.domain.addons.labels import accelerator_for, plan_labels


@pytest.mark.parametrize(
    ("accelerator_type", "accelerator"),
    [
        ("module-910b-8", "huawei-Ascend910"),
        ("module-a3-16-super-pod", "huawei-Ascend910"),
        ("card", "huawei-Ascend910"),
        ("950-SuperPod-Atlas-8", "huawei-npu"),
        ("350-Atlas-4p-8", "huawei-npu"),
    ],
)
def test_accelerator_label(accelerator_type: str, accelerator: str) -> None:
    assert accelerator_for(accelerator_type) == accelerator


def test_masters_and_workers_get_their_labels_grouped_and_chunked() -> None:
    hostvars = {
        "cp1": {},
        **{f"n{i}": {"npu_accelerator_type": "module-910b-8"} for i in range(5)},
        "x": {
            "npu_accelerator_type": "module-a3-16",
            "npu_host_arch": "huawei-x86",
            "npu_node_name": "x.k8s",
        },
    }
    plan, problems = plan_labels(["cp1"], [*(f"n{i}" for i in range(5)), "x"], hostvars, chunk=2)
    assert problems == []
    assert plan.nodes == 7
    assert [(dict(g.labels), g.nodes) for g in plan.groups] == [
        ({"masterselector": "dls-master-node"}, ("cp1",)),
        *[
            (
                {
                    "accelerator": "huawei-Ascend910",
                    "accelerator-type": "module-910b-8",
                    "host-arch": "huawei-arm",
                    "node-role.kubernetes.io/worker": "worker",
                    "workerselector": "dls-worker-node",
                },
                nodes,
            )
            for nodes in (("n0", "n1"), ("n2", "n3"), ("n4",))
        ],
        (
            {
                "accelerator": "huawei-Ascend910",
                "accelerator-type": "module-a3-16",
                "host-arch": "huawei-x86",
                "node-role.kubernetes.io/worker": "worker",
                "workerselector": "dls-worker-node",
            },
            ("x.k8s",),
        ),
    ]
    assert plan.groups[0].kubectl_args() == [
        "label",
        "nodes",
        "--overwrite",
        "cp1",
        "masterselector=dls-master-node",
    ]


@pytest.mark.parametrize(
    ("hostvars", "problem"),
    [
        pytest.param(
            {"npu_host_arch": "arm64"},
            "host w: host-arch 'arm64' must be one of huawei-arm, huawei-x86",
            id="host-arch",
        ),
        pytest.param(
            {"npu_accelerator_type": "module 910b"},
            "host w: invalid label value(s) accelerator-type='module 910b'",
            id="label-value",
        ),
    ],
)
def test_bad_values_named(hostvars: dict, problem: str) -> None:
    _, problems = plan_labels([], ["w"], {"w": hostvars})
    assert problem in problems
