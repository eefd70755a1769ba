"""The add-on roles on one container: manifests rendered and valid, apply SKIPPED, bad objects refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

INSTANCE = "ufcctl-molecule-k8s-addons"
COMPONENTS = {
    "demo": ["00-namespaces.yaml", "10-demo.yaml"],
    "nodelocaldns": [
        "00-namespaces.yaml", "10-serviceaccount.yaml", "20-services.yaml", "30-configmap.yaml",
        "40-daemonset.yaml", "50-coredns-autoscaler.yaml",
    ],
    "device-plugin": ["00-namespaces.yaml", "10-device-plugin.yaml"],
    "volcano": ["00-namespaces.yaml", "10-scheduler.yaml", "20-controllers.yaml", "30-queues.yaml"],
    "ascend-operator": ["00-namespaces.yaml", "10-ascendjob-crd.yaml", "20-ascend-operator.yaml"],
    "clusterd": ["00-namespaces.yaml", "10-clusterd.yaml"],
    "noded": ["00-namespaces.yaml", "10-noded.yaml"],
    "npu-exporter": ["00-namespaces.yaml", "10-npu-exporter.yaml"],
    "tor-map": ["00-namespaces.yaml", "10-basic-tor-node-cm.yaml"],
}


@pytest.fixture
def manifests(monkeypatch: pytest.MonkeyPatch) -> Path:
    root = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "ufc"
    monkeypatch.setenv("UFC_STATE_DIR", str(root))
    monkeypatch.setenv("ANSIBLE_ROLES_PATH", str(Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "roles"))
    return root / "manifests" / "molecule"


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_every_component_written(manifests: Path, component: str) -> None:
    assert sorted(p.name for p in (manifests / component).iterdir()) == COMPONENTS[component]


def test_tor_map_and_label_plan_follow_the_inventory(manifests: Path) -> None:
    (cm,) = _docs(manifests / "tor-map" / "10-basic-tor-node-cm.yaml")
    info = json.loads(cm["data"]["tor_info"])
    tors = [(t["tor_id"], t["tor_ip"], [s["server_ip"] for s in t["server"]]) for t in info["server_list"]]
    assert tors == [
        (1, "10.2.0.1", ["10.1.0.1", "10.1.0.2"]),
        (2, "10.2.0.2", ["10.1.0.3", "10.1.0.4"]),
    ]
    assert {s["npu_count"] for t in info["server_list"] for s in t["server"]} == {16}
    plan = json.loads((manifests / "node-labels" / "plan.json").read_text())
    by_node = {n: g["labels"] for g in plan["groups"] for n in g["nodes"]}
    assert by_node[INSTANCE] == {"masterselector": "dls-master-node"}
    assert by_node["npu3"]["accelerator-type"] == "module-a3-16-super-pod"
    assert by_node["npu3"]["workerselector"] == "dls-worker-node"


def test_rerun_reports_every_apply_skipped_and_copies_nothing(host, run_playbook) -> None:
    run = run_playbook()
    assert run.rc == 0, run.output
    for component in [*COMPONENTS, "node-labels"]:
        assert f"{component}: apply SKIPPED" in run.text, component
    assert "serverside" not in run.text and "labeled" not in run.text
    assert not host.file("/etc/kubernetes/ufcctl-manifests").exists


@pytest.mark.parametrize(
    ("extra_vars", "line"),
    [
        pytest.param(
            {"demo_extra_field": "imagePullPolicyy", "demo_queue_weight": 0},
            "10-demo.yaml: Deployment/ufc-demo/demo: Additional properties are not allowed "
            "('imagePullPolicyy' was unexpected) at spec.template.spec.containers[0]",
            id="builtin-unknown-field",
        ),
        pytest.param(
            {"demo_queue_weight": 0},
            "10-demo.yaml: Queue/demo: 0 is less than the minimum of 1 at spec.weight",
            id="crd-schema",
        ),
    ],
)
def test_bad_object_refused_with_one_line_and_nothing_written(
    manifests: Path, run_playbook, extra_vars: dict, line: str
) -> None:
    demo = manifests / "demo"
    before = {p.name: p.read_text() for p in demo.iterdir()}
    run = run_playbook(playbook="demo.yml", extra_vars=extra_vars)
    assert run.rc != 0
    assert line in run.text, run.output
    assert "nothing written or applied" in run.text
    assert {p.name: p.read_text() for p in demo.iterdir()} == before
