"""Admission of a joined NPU node (roles/ascend_driver tasks/admit.yml, called by roles/kube_node):
health gate, then the NPU health taint removed through kubectl on the first control plane.

Runs ansible-playbook on this machine (connection local) against stand-ins written by the test: an
npu-smi that prints chips with a given health and a kubectl that holds one node object in a file
and logs every call. No apiserver runs here (nor in the lab), so this is where the removal is
proved; the lab test sees the SKIPPED report instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"
TAINT = {"key": "ufcctl.io/npu-health-pending", "value": "true", "effect": "NoSchedule"}

KUBECTL = """#!{python}
import json, sys
from pathlib import Path
here = Path(__file__).parent
args = [a for a in sys.argv[1:] if not a.startswith("--kubeconfig=")]
with (here / "calls.jsonl").open("a") as log:
    log.write(json.dumps(args) + "\\n")
node = json.loads((here / "node.json").read_text())
if args[:2] == ["get", "node"]:
    if args[2] != node["metadata"]["name"]:
        sys.exit('Error from server (NotFound): nodes "' + args[2] + '" not found')
    print(json.dumps(node))
elif args[:2] == ["taint", "nodes"]:
    key, effect = args[3].rstrip("-").split(":")
    taints = node["spec"].get("taints") or []
    kept = [t for t in taints if not (t["key"] == key and t["effect"] == effect)]
    if kept == taints:
        sys.exit("error: taint " + args[3] + " not found")
    node["spec"]["taints"] = kept
    (here / "node.json").write_text(json.dumps(node))
    print("node/" + args[2] + " untainted")
elif args[:2] == ["annotate", "node"]:
    meta = node["metadata"].setdefault("annotations", {{}})
    change = [a for a in args[3:] if a != "--overwrite"][0]
    if change.endswith("-"):
        meta.pop(change[:-1], None)
    else:
        key, value = change.split("=", 1)
        meta[key] = value
    (here / "node.json").write_text(json.dumps(node))
elif args[:2] == ["label", "node"]:
    meta = node["metadata"].setdefault("labels", {{}})
    for change in args[3:]:
        if change != "--overwrite":
            key, value = change.split("=", 1)
            meta[key] = value
    (here / "node.json").write_text(json.dumps(node))
elif args[0] in ("cordon", "uncordon"):
    node["spec"]["unschedulable"] = args[0] == "cordon"
    (here / "node.json").write_text(json.dumps(node))
else:
    sys.exit("kubectl stand-in: not emulated: " + " ".join(args))
"""

NPU_SMI = """#!/bin/sh
echo "+------------------------------------------------------------------------------------------------+"
echo "| npu-smi 24.1.rc3                 Version: 24.1.rc3                                             |"
echo "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|"
echo "| 0     910B3               | {health}            | 90.1        40                0    / 0   |"
echo "| 1     910B3               | OK            | 90.1        40                0    / 0             |"
"""

PLAY = """
- name: Admit w1
  hosts: w1
  gather_facts: false
  tasks:
    - name: Admit
      ansible.builtin.include_role:
        name: ascend_driver
        tasks_from: admit
"""


def _setup(tmp: Path, *, health: str | None, kubectl: bool = True, tainted: bool = True,
           joined: bool = True) -> dict[str, str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    if joined:  # what kubeadm join writes; the admission record names it
        (tmp / "kubelet.conf").write_text("apiVersion: v1\nkind: Config\n")
    (bin_dir / "node.json").write_text(json.dumps(
        {"metadata": {"name": "w1"}, "spec": {"taints": [TAINT] if tainted else []}}))
    (bin_dir / "kubectl").write_text(KUBECTL.format(python=sys.executable))
    (bin_dir / "kubectl").chmod(0o755)
    smi = bin_dir / "npu-smi"
    if health is not None:
        smi.write_text(NPU_SMI.format(health=health))
        smi.chmod(0o755)
    (tmp / "admin.conf").write_text("apiVersion: v1\nkind: Config\n")
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"vars": {
        "k8s_manifests_kubectl": str(bin_dir / "kubectl") if kubectl else str(bin_dir / "no-kubectl"),
        "k8s_manifests_kubeconfig": str(tmp / "admin.conf"),
        "ascend_driver_expected_chips": 2,
    }, "children": {
        "kube_control_plane": {"hosts": {"cp1": local}},
        "kube_node": {"children": {"npu_node": {"hosts": {"w1": local}}}},
    }}}
    (tmp / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp / "play.yml").write_text(PLAY)
    return {"smi": str(smi)}


def _run(tmp: Path, smi: str, *extra: str) -> dict[str, Any]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")},
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    proc = subprocess.run(
        [str(PLAYBOOK_BIN), "-i", str(tmp / "hosts.yml"), str(tmp / "play.yml"),
         "-e", json.dumps({"__ascend_driver_npu_smi": smi,
                           "__ascend_driver_kubelet_conf": str(tmp / "kubelet.conf"),
                           "__ascend_driver_admission_flag": str(tmp / "admitted")}), *extra],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    calls_file = tmp / "bin" / "calls.jsonl"
    calls = [json.loads(line) for line in calls_file.read_text().splitlines()] if calls_file.exists() else []
    node = json.loads((tmp / "bin" / "node.json").read_text())
    out = " ".join((proc.stdout + proc.stderr).split())  # the yaml callback folds long messages
    flag = tmp / "admitted"
    return {"rc": proc.returncode, "out": out, "calls": calls, "taints": node["spec"]["taints"],
            "flag": flag.read_text() if flag.exists() else None, "node": node}


AdmittedTwice = tuple[Path, str, dict[str, Any], dict[str, Any]]


@pytest.fixture(scope="module")
def admitted_twice(tmp_path_factory: pytest.TempPathFactory) -> AdmittedTwice:
    """Healthy chips, the admission run twice on a fresh node (the same two runs both tests below read;
    one ansible-playbook pair instead of two): (directory, npu-smi, first run, second run). A test that
    goes on from this state (joins again) does so in this module's own directory, after both results
    were taken."""
    tmp = tmp_path_factory.mktemp("admitted-twice")
    paths = _setup(tmp, health="OK")
    first = _run(tmp, paths["smi"])
    second = _run(tmp, paths["smi"])
    return tmp, paths["smi"], first, second


@pytest.fixture(scope="module")
def without_kubectl(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Healthy chips, no kubectl on the control plane: one run that two tests read."""
    tmp = tmp_path_factory.mktemp("without-kubectl")
    paths = _setup(tmp, health="OK", kubectl=False)
    return _run(tmp, paths["smi"])


def test_healthy_chips_remove_the_taint_once_and_a_second_run_changes_nothing(
        admitted_twice: AdmittedTwice) -> None:
    _, _, first, second = admitted_twice
    assert first["rc"] == 0, first["out"][-3000:]
    assert first["taints"] == []
    assert ["taint", "nodes", "w1", "ufcctl.io/npu-health-pending:NoSchedule-"] in first["calls"]
    assert second["rc"] == 0, second["out"][-3000:]
    assert [c for c in second["calls"] if c[0] == "taint"] == [c for c in first["calls"] if c[0] == "taint"]
    assert "changed=0" in second["out"]


def test_an_admitted_node_is_not_asked_again_until_it_joins_again(
        admitted_twice: AdmittedTwice) -> None:
    """The no-op shortcut (issue 29): once the taint is gone the node records it, and later runs make
    no kubectl call and no health gate run; a new registration (kubeadm join rewrites kubelet.conf)
    makes the record stale, so that node is admitted again."""
    tmp_path, smi, first, second = admitted_twice
    assert first["rc"] == 0 and first["taints"] == [], first["out"][-3000:]
    assert first["flag"] and "ufcctl.io/npu-health-pending:NoSchedule" in first["flag"]
    assert second["rc"] == 0, second["out"][-3000:]
    assert second["calls"] == first["calls"]  # not one kubectl call more
    assert "Check chip health before admitting" not in second["out"] or "skipping" in second["out"]
    # the node joins again (registered tainted anew): kubelet.conf is rewritten
    node = json.loads((tmp_path / "bin" / "node.json").read_text())
    node["spec"]["taints"] = [TAINT]
    (tmp_path / "bin" / "node.json").write_text(json.dumps(node))
    conf = tmp_path / "kubelet.conf"
    os.utime(conf, ns=(conf.stat().st_atime_ns, conf.stat().st_mtime_ns + 10**9))
    third = _run(tmp_path, smi)
    assert third["rc"] == 0 and third["taints"] == [], third["out"][-3000:]
    assert third["flag"] != first["flag"]


def test_the_admission_labels_the_node_with_its_versions_and_releases_a_drain_of_the_play(
        tmp_path: Path) -> None:
    """After the install task (upgrade-drivers: __ascend_driver_admit_check false, the versions judged), the
    taint's removal sets ufcctl.io/npu-driver and -firmware (what upgrade-drivers reads before it drains) and
    uncordons a node the role's in-play drain cordoned (mark npu-driver), in the same module run on the first
    control plane. The join's admission (versions not checked) writes no labels; current labels no call."""
    paths = _setup(tmp_path, health="OK")
    node = json.loads((tmp_path / "bin" / "node.json").read_text())
    node["spec"]["unschedulable"] = True
    node["metadata"]["annotations"] = {"ufcctl.io/cordoned-for": "npu-driver"}
    (tmp_path / "bin" / "node.json").write_text(json.dumps(node))
    versions = {"ascend_driver_version": "24.1.rc3", "ascend_driver_firmware_version": "7.5.0.2.220"}
    joined = _run(tmp_path, paths["smi"], "-e", json.dumps(versions))
    assert joined["rc"] == 0, joined["out"][-3000:]
    assert "labels" not in joined["node"]["metadata"] and not [c for c in joined["calls"] if c[0] == "label"]
    assert not joined["node"]["spec"]["unschedulable"] and joined["node"]["metadata"]["annotations"] == {}

    conf = tmp_path / "kubelet.conf"  # admitted again after the install task
    installed = ("-e", json.dumps({**versions, "__ascend_driver_admit_check": False}))
    for _ in range(2):
        os.utime(conf, ns=(conf.stat().st_atime_ns, conf.stat().st_mtime_ns + 10**9))
        after = _run(tmp_path, paths["smi"], *installed)
        assert after["rc"] == 0, after["out"][-3000:]
    assert after["node"]["metadata"]["labels"] == {"ufcctl.io/npu-driver": "24.1.rc3",
                                                   "ufcctl.io/npu-firmware": "7.5.0.2.220"}
    label = ["label", "node", "w1", "--overwrite", "ufcctl.io/npu-driver=24.1.rc3",
             "ufcctl.io/npu-firmware=7.5.0.2.220"]
    assert [c for c in after["calls"] if c[0] == "label"] == [label]  # once: the second found them current


def test_an_operators_cordon_is_kept_by_the_admission(tmp_path: Path) -> None:
    paths = _setup(tmp_path, health="OK")
    node = json.loads((tmp_path / "bin" / "node.json").read_text())
    node["spec"]["unschedulable"] = True  # no ufcctl mark: an operator's
    (tmp_path / "bin" / "node.json").write_text(json.dumps(node))
    result = _run(tmp_path, paths["smi"])
    assert result["rc"] == 0, result["out"][-3000:]
    assert result["node"]["spec"]["unschedulable"] is True and ["uncordon", "w1"] not in result["calls"]


def test_a_node_that_never_joined_has_no_taint_to_remove(tmp_path: Path) -> None:
    paths = _setup(tmp_path, health="OK", joined=False)
    result = _run(tmp_path, paths["smi"])
    assert result["rc"] == 0, result["out"][-3000:]
    assert result["calls"] == [] and result["flag"] is None


def test_a_skipped_removal_records_nothing(without_kubectl: dict[str, Any]) -> None:
    result = without_kubectl
    assert result["rc"] == 0 and result["flag"] is None, result["out"][-3000:]


def test_check_mode_reads_the_node_and_removes_nothing(tmp_path: Path) -> None:
    paths = _setup(tmp_path, health="OK")
    result = _run(tmp_path, paths["smi"], "--check")
    assert result["rc"] == 0, result["out"][-3000:]
    assert result["taints"] == [TAINT]
    assert all(c[0] == "get" for c in result["calls"])
    assert result["flag"] is None


def test_an_unhealthy_chip_fails_the_node_and_keeps_the_taint(tmp_path: Path) -> None:
    paths = _setup(tmp_path, health="Warning")
    result = _run(tmp_path, paths["smi"])
    assert result["rc"] != 0
    assert "chips not OK: 0 Warning" in result["out"]
    assert result["taints"] == [TAINT] and result["calls"] == []


def test_no_driver_keeps_the_taint_and_says_how_to_admit_the_node(tmp_path: Path) -> None:
    paths = _setup(tmp_path, health=None)
    result = _run(tmp_path, paths["smi"])
    assert result["rc"] == 0, result["out"][-3000:]
    assert "keeps the taint ufcctl.io/npu-health-pending:NoSchedule" in result["out"]
    assert "ufcctl upgrade-drivers" in result["out"]
    assert result["taints"] == [TAINT] and result["calls"] == []


def test_without_kubectl_on_the_control_plane_the_removal_is_reported_skipped(
        without_kubectl: dict[str, Any]) -> None:
    result = without_kubectl
    assert result["rc"] == 0, result["out"][-3000:]
    assert "NOT removed (SKIPPED)" in result["out"] and "not found in PATH" in result["out"]
    assert result["taints"] == [TAINT]


@pytest.mark.parametrize("role", ["ascend_driver", "kube_node"])
def test_both_roles_name_the_same_taint(role: str) -> None:
    defaults = yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())
    name = "ascend_driver_admission_taint" if role == "ascend_driver" else "kube_node_npu_taint"
    assert defaults[name] == TAINT
