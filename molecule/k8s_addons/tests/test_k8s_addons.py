"""The add-on roles on one container: manifests rendered and valid, apply SKIPPED (read from the runs log)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

INSTANCE = "ufcctl-molecule-k8s-addons"
COMPONENTS = {
    "demo": ["00-namespaces.yaml", "10-demo.yaml"],
    "cni": [
        "00-namespaces.yaml", "10-rbac.yaml", "20-configmap.yaml", "30-typha.yaml", "40-calico-node.yaml",
        "50-kube-controllers.yaml", "60-calico-resources.yaml",
    ],
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


# The components whose role (of the same name) ships CRDs in roles/<role>/files/crds: they are written
# beside its manifests and applied first.
SHIPS_CRDS = ("cni", "volcano")


def _shipped_crds(component: str) -> list[str]:
    if component not in SHIPS_CRDS:
        return []
    crds = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "roles" / component / "files" / "crds"
    return [p.name for p in crds.glob("*.yaml")]


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_every_component_written(manifests: Path, component: str) -> None:
    expected = sorted(COMPONENTS[component] + _shipped_crds(component))
    assert sorted(p.name for p in (manifests / component).iterdir()) == expected


def test_cni_peers_with_each_tor_of_the_inventory(manifests: Path) -> None:
    docs = _docs(manifests / "cni" / "60-calico-resources.yaml")
    peers = sorted((d["spec"]["nodeSelector"], d["spec"]["peerIP"]) for d in docs if d["kind"] == "BGPPeer")
    assert peers == [("npu-tor-id == 'tor-1'", "10.2.0.1"), ("npu-tor-id == 'tor-2'", "10.2.0.2")]
    (typha,) = [d for d in _docs(manifests / "cni" / "30-typha.yaml") if d["kind"] == "Deployment"]
    assert typha["spec"]["replicas"] == 3  # 4 kube_node hosts: floor(4 / 200) + 2, at least 3


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
    # the cluster phase labels the control planes only: a worker's Node does not exist before the node
    # phase, where roles/kube_node labels it right after its join (D2)
    assert by_node == {INSTANCE: {"masterselector": "dls-master-node"}}


FIRST_PLAY = "Add four NPU hosts (never contacted; their vars feed the ToR map and the node labels)"


@pytest.fixture(scope="module")
def runs(logged_runs) -> dict:
    check, converge, idempotence = logged_runs(FIRST_PLAY)[-3:]
    return {"check": check, "converge": converge, "idempotence": idempotence}


@pytest.mark.parametrize("step", ["converge", "idempotence"])
def test_every_apply_is_reported_skipped_after_one_probe(host, runs, step: str) -> None:
    text = runs[step].text
    for component in [*COMPONENTS, "node-labels"]:
        assert f"{component}: apply SKIPPED on {INSTANCE} (kubectl not found in PATH)" in text, component
    # one probe of the apply host for the whole play; no kubectl call, nothing sent to the host
    assert text.count("TASK [k8s_manifests : Probe kubectl and the kubeconfig on the apply host") == 1
    assert "serverside" not in text and "labeled" not in text
    assert not host.file("/etc/kubernetes").exists


def test_check_mode_reports_the_apply_skipped_without_probing(runs) -> None:
    text = runs["check"].text
    for component in [*COMPONENTS, "node-labels"]:
        assert f"{component}: apply SKIPPED on {INSTANCE} (check mode)" in text, component
    assert "kubectl not found" not in text
