"""Tier 1 of the NPU fabric in the join's admission (roles/ascend_driver tasks/admit.yml, which
roles/kube_node calls after a join): the device IPs and /etc/hccn.conf written from the plan, a fault
holds the node (taint kept, cordoned with ufcctl's mark, the reason annotated) and fails it naming the
chip, and a repaired node is admitted by the next run (taint, annotation and cordon gone).

Runs ansible-playbook on this machine (connection local) against stand-ins written by the test: an npu-smi
that prints two healthy chips, a kubectl that holds one node object in a file, and the lab NPU emulator's
hccn_tool with its files under the test's directory (UFC_NPU_EMULATOR_ROOT). The upgrade-drivers path is the
lab's (tests/integration/test_npu_fabric_lab.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

# the same admission play, run from the role, and the same kubectl stand-in (strict as kubectl: an
# absent taint or node is an error)
from tests.unit.roles.test_npu_admission import KUBECTL, PLAY

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"
TAINT = {"key": "ufcctl.io/npu-health-pending", "value": "true", "effect": "NoSchedule"}
HCCN_TOOL = ROOT / "tests" / "lab_standins" / "npu_emulator" / "hccn_tool.py"


NPU_SMI = """#!/bin/sh
echo "| npu-smi 24.1.rc3                 Version: 24.1.rc3                                             |"
echo "| 0     910B3               | OK            | 90.1        40                0    / 0             |"
echo "| 1     910B3               | OK            | 90.1        40                0    / 0             |"
"""


PLAN = [{"chip": i, "address": f"10.20.0.{10 + i}", "netmask": "255.255.255.0", "gateway": "10.20.0.1",
         "switch": "4", "port": f"200GE1/0/{9 + i}"} for i in range(2)]


def _setup(tmp: Path) -> None:
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (tmp / "kubelet.conf").write_text("apiVersion: v1\nkind: Config\n")
    (bin_dir / "node.json").write_text(json.dumps({"metadata": {"name": "w1"}, "spec": {"taints": [TAINT]}}))
    (bin_dir / "kubectl").write_text(KUBECTL.format(python=sys.executable))
    (bin_dir / "npu-smi").write_text(NPU_SMI)
    tool = bin_dir / "hccn_tool"
    tool.write_text(f"#!{sys.executable}\n" + HCCN_TOOL.read_text())
    for name in ("kubectl", "npu-smi", "hccn_tool"):
        (bin_dir / name).chmod(0o755)
    (tmp / "admin.conf").write_text("apiVersion: v1\nkind: Config\n")
    wiring = tmp / "emu" / "etc" / "ufc-npu-emulator"
    wiring.mkdir(parents=True)
    (wiring / "wiring.json").write_text(json.dumps(
        {"chips": {str(c["chip"]): {"switch": c["switch"], "port": c["port"]} for c in PLAN}}))
    _faults(tmp, {})
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"vars": {
        "k8s_manifests_kubectl": str(bin_dir / "kubectl"),
        "k8s_manifests_kubeconfig": str(tmp / "admin.conf"),
        "ascend_driver_expected_chips": 2, "ascend_driver_fabric": PLAN, "ascend_driver_textfile_dir": "",
    }, "children": {
        "kube_control_plane": {"hosts": {"cp1": local}},
        "kube_node": {"children": {"npu_node": {"hosts": {"w1": local}}}},
    }}}
    (tmp / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp / "play.yml").write_text(PLAY)


def _faults(tmp: Path, faults: dict[str, Any]) -> None:
    (tmp / "emu" / "etc" / "ufc-npu-emulator.json").write_text(json.dumps({"chips": 2, **faults}))


def _run(tmp: Path) -> dict[str, Any]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")},
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "UFC_NPU_EMULATOR_ROOT": str(tmp / "emu"),
    }
    extra = {"__ascend_driver_npu_smi": str(tmp / "bin" / "npu-smi"),
             "__ascend_driver_hccn_tool": str(tmp / "bin" / "hccn_tool"),
             "__ascend_driver_hccn_conf": str(tmp / "hccn.conf"),
             "__ascend_driver_kubelet_conf": str(tmp / "kubelet.conf"),
             "__ascend_driver_admission_flag": str(tmp / "admitted")}
    proc = subprocess.run([str(PLAYBOOK_BIN), "-i", str(tmp / "hosts.yml"), str(tmp / "play.yml"), "-e",
                           json.dumps(extra)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    node = json.loads((tmp / "bin" / "node.json").read_text())
    return {"rc": proc.returncode, "out": " ".join((proc.stdout + proc.stderr).split()),
            "taints": node["spec"].get("taints") or [], "cordoned": bool(node["spec"].get("unschedulable")),
            "annotations": node["metadata"].get("annotations") or {}, "admitted": (tmp / "admitted").exists()}


def test_a_fault_holds_the_node_naming_the_chip_and_the_repaired_node_is_admitted(tmp_path: Path) -> None:
    _setup(tmp_path)
    _faults(tmp_path, {"lldp": {"1": {"switch": "4", "port": "200GE1/0/33"}}})  # chip 1 miscabled
    held = _run(tmp_path)
    assert held["rc"] != 0
    why = "NPU fabric: chip 1: LLDP neighbour 4 port 200GE1/0/33 (expected 4 port 200GE1/0/10)"
    assert why in held["out"]
    assert held["taints"] == [TAINT] and held["cordoned"] and not held["admitted"]
    assert held["annotations"]["ufcctl.io/cordoned-for"] == "npu-fabric"
    assert held["annotations"]["ufcctl.io/npu-fabric"].startswith("NPU fabric: chip 1: LLDP neighbour")
    conf = (tmp_path / "hccn.conf").read_text()  # the addresses were written before the check
    assert "address_0=10.20.0.10\n" in conf and "netdetect_1=10.20.0.1\n" in conf

    _faults(tmp_path, {})
    admitted = _run(tmp_path)
    assert admitted["rc"] == 0, admitted["out"][-3000:]
    assert admitted["taints"] == [] and not admitted["cordoned"] and admitted["admitted"]
    assert admitted["annotations"] == {}


def test_an_operators_cordon_is_kept_when_the_hold_is_lifted(tmp_path: Path) -> None:
    _setup(tmp_path)
    node = json.loads((tmp_path / "bin" / "node.json").read_text())
    node["spec"]["unschedulable"] = True  # cordoned by hand: no ufcctl mark
    (tmp_path / "bin" / "node.json").write_text(json.dumps(node))
    _faults(tmp_path, {"link_down": [0]})
    held = _run(tmp_path)
    assert held["rc"] != 0 and "chip 0: link DOWN" in held["annotations"]["ufcctl.io/npu-fabric"]
    assert "ufcctl.io/cordoned-for" not in held["annotations"]
    _faults(tmp_path, {})
    admitted = _run(tmp_path)
    assert admitted["rc"] == 0 and admitted["taints"] == [] and admitted["annotations"] == {}
    assert admitted["cordoned"]  # the operator's cordon stays
