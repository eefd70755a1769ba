"""k8s_manifests end to end on a local host against a kubectl stand-in (no apiserver runs in the lab).

One ansible-playbook run: the role's probe, then `ufcctl_manifests` tasks as the add-on roles call
them. The stand-in answers `kubectl diff` like a server that holds exactly what was applied before
(exit 1 until a text was applied, 0 after) and logs every call with its standard input, so the test
sees the order of the calls, what each received, that a second run applies nothing, that labels go
in groups, and that a bad object stops the task before anything is written or applied.
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
DEMO_TEMPLATES = ROOT / "molecule" / "k8s_addons" / "templates"

KUBECTL = """#!{python}
import hashlib, json, sys
from pathlib import Path
here = Path(__file__).parent
args = sys.argv[1:]
stdin = sys.stdin.read() if "--filename=-" in args else ""
with (here / "calls.jsonl").open("a") as log:
    log.write(json.dumps({{"args": args, "stdin": stdin}}) + "\\n")
state = here / "cluster.json"
held = set(json.loads(state.read_text())) if state.exists() else set()
key = hashlib.sha256((stdin or " ".join(args[2:])).encode()).hexdigest()
verb = args[1]  # args[0] is --kubeconfig=...
if verb == "diff":
    sys.exit(0 if key in held else 1)
held.add(key)
state.write_text(json.dumps(sorted(held)))
print("node/a labeled" if verb == "label" else "serverside-applied")
"""

COMPONENT = """
    - name: {name}
      ufcctl_manifests:
        component: demo
        templates: {templates}
        namespaces: [ufc-demo]
      delegate_to: "{{{{ k8s_manifests_apply_host }}}}"
      run_once: true
"""

PLAY = """
- name: Add-on components against the kubectl stand-in
  hosts: kube_control_plane
  gather_facts: false
  roles: [k8s_manifests]
  tasks:
{first}{second}
    - name: Labels
      ufcctl_manifests:
        component: node-labels
        labels:
          nodes: 3
          groups:
            - {{labels: {{role: a}}, nodes: [n1, n2], args: [label, nodes, --overwrite, n1, n2, role=a]}}
            - {{labels: {{role: b}}, nodes: [n3], args: [label, nodes, --overwrite, n3, role=b]}}
      delegate_to: "{{{{ k8s_manifests_apply_host }}}}"
      run_once: true
{bad}
      vars:
        demo_extra_field: imagePullPolicyy
        demo_queue_weight: 0
      ignore_errors: true

    - name: Labels for a node that is not in the run
      ufcctl_manifests:
        component: node-labels
        labels:
          nodes: 1
          groups:
            - {{labels: {{role: a}}, nodes: [n9], args: [label, nodes, --overwrite, n9, role=a]}}
      delegate_to: "{{{{ k8s_manifests_apply_host }}}}"
      run_once: true
      ignore_errors: true
"""


def _results(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Task name (without the role prefix) -> cp1's result."""
    return {
        t["task"]["name"].split(" : ")[-1]: t["hosts"].get("cp1", {})
        for play in report["plays"]
        for t in play["tasks"]
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("k8s_manifests")
    kubectl = tmp / "bin" / "kubectl"
    kubectl.parent.mkdir()
    kubectl.write_text(KUBECTL.format(python=sys.executable))
    kubectl.chmod(0o755)
    (tmp / "admin.conf").write_text("apiVersion: v1\nkind: Config\n")
    host = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "k8s_manifests_kubectl": str(kubectl),
        "k8s_manifests_kubeconfig": str(tmp / "admin.conf"),
        "ufc_inventory_name": "unit",
        # the demo's Queue: its CRD ships with roles/volcano, which this play does not deploy
        "k8s_manifests_cluster_crds": ["queues.scheduling.volcano.sh"],
    }
    # n1..n3: workers of the run (their vars only; the play runs on cp1), the nodes the labels name
    workers = {f"n{i}": {"ansible_connection": "local"} for i in (1, 2, 3)}
    inventory = {"all": {"children": {"kube_control_plane": {"hosts": {"cp1": host}},
                                      "kube_node": {"hosts": workers}}}}
    (tmp / "hosts.yml").write_text(yaml.safe_dump(inventory))
    play = PLAY.format(
        first=COMPONENT.format(name="Demo", templates=DEMO_TEMPLATES),
        second=COMPONENT.format(name="Demo again", templates=DEMO_TEMPLATES),
        bad=COMPONENT.format(name="Demo with a bad object", templates=DEMO_TEMPLATES).rstrip("\n"),
    )
    (tmp / "play.yml").write_text(play)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")},
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "UFC_STATE_DIR": str(tmp / "state"),
        # the action imports ufcctl: this checkout's, not whichever one is installed
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    proc = subprocess.run(
        [str(PLAYBOOK_BIN), "-i", str(tmp / "hosts.yml"), str(tmp / "play.yml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    start = proc.stdout.find("{\n")  # ansible.cfg's profile_tasks prints its recap too
    assert start >= 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report, _ = json.JSONDecoder().raw_decode(proc.stdout[start:])
    calls = [json.loads(line) for line in (tmp / "bin" / "calls.jsonl").read_text().splitlines()]
    return {
        "rc": proc.returncode, "results": _results(report), "calls": calls,
        "dest": tmp / "state" / "manifests" / "unit", "stdout": proc.stdout,
    }


def test_the_playbook_ran_every_step(run) -> None:
    # only the bad object's task failed, and it was told to be ignored
    failed = [name for name, result in run["results"].items() if result.get("failed")]
    expected = ["Demo with a bad object", "Labels for a node that is not in the run"]
    assert failed == expected, run["stdout"][-3000:]


def test_each_file_is_diffed_then_applied_server_side_in_order(run) -> None:
    result = run["results"]["Demo"]
    assert result["changed"] is True and result["apply"] == "applied"
    assert result["applied"] == ["00-namespaces.yaml", "10-demo.yaml"]
    assert result["msg"].startswith(
        "demo: applied on cp1: 00-namespaces.yaml, 10-demo.yaml (server-side, field manager ufcctl); "
        "4 objects valid against Kubernetes"
    )
    demo_calls = [c for c in run["calls"] if c["args"][1] in ("diff", "apply")][:4]
    assert [(c["args"][1], c["stdin"].split("name: ")[1].split()[0]) for c in demo_calls] == [
        ("diff", "ufc-demo"), ("apply", "ufc-demo"), ("diff", "demo"), ("apply", "demo"),
    ]
    assert all(
        "--server-side" in c["args"] and "--field-manager=ufcctl" in c["args"]
        and "--force-conflicts" in c["args"]  # issue 44, D21: no 409 on a field another manager set
        for c in demo_calls
    )
    assert (run["dest"] / "demo" / "10-demo.yaml").read_text() + "\n" == demo_calls[3]["stdin"]


def test_a_second_run_finds_the_cluster_current_and_applies_nothing(run) -> None:
    result = run["results"]["Demo again"]
    assert result["changed"] is False and result["applied"] == []
    assert result["unchanged"] == ["00-namespaces.yaml", "10-demo.yaml"]
    assert "demo: the cluster already matches on cp1" in result["msg"]
    assert [c["args"][1] for c in run["calls"]].count("apply") == 2  # the first run's two files


def test_labels_are_planned_beside_the_manifests_and_applied_in_groups(run) -> None:
    result = run["results"]["Labels"]
    assert result["changed"] is True and result["labelled"] == 2
    labels = [c["args"] for c in run["calls"] if c["args"][1] == "label"]
    assert labels == [
        [labels[0][0], "label", "nodes", "--overwrite", "n1", "n2", "role=a"],
        [labels[0][0], "label", "nodes", "--overwrite", "n3", "role=b"],
    ]
    assert labels[0][0] == "--kubeconfig=" + str(run["dest"].parents[2] / "admin.conf")
    assert json.loads((run["dest"] / "node-labels" / "plan.json").read_text())["nodes"] == 3


def test_a_bad_object_is_refused_with_one_line_each_and_nothing_written_or_applied(run) -> None:
    result = run["results"]["Demo with a bad object"]
    assert result["msg"].splitlines() == [
        "demo: 2 problem(s) in the manifests; nothing written or applied",
        "10-demo.yaml: Deployment/ufc-demo/demo: Additional properties are not allowed "
        "('imagePullPolicyy' was unexpected) at spec.template.spec.containers[0] [Kubernetes 1.34]",
        "10-demo.yaml: Queue/demo: 0 is less than the minimum of 1 at spec.weight "
        "[CRD from scheduling.volcano.sh_queues.yaml]",
    ]
    assert "weight: 1" in (run["dest"] / "demo" / "10-demo.yaml").read_text()  # the good run's file
    assert run["calls"][-1]["args"][1] == "label"  # no kubectl call after the labels task


PROBE = "Probe kubectl and the kubeconfig on the apply host (read by every component of the play)"


def test_the_role_probes_the_apply_host_without_calling_kubectl(run) -> None:
    assert run["results"][PROBE]["ready"] is True
    # the probe looks for the files; it does not call kubectl
    assert {c["args"][1] for c in run["calls"]} == {"diff", "apply", "label"}


def test_a_label_plan_naming_a_node_outside_the_run_is_refused_before_kubectl(run) -> None:
    result = run["results"]["Labels for a node that is not in the run"]
    assert result["msg"].startswith("node-labels: the label plan names 1 node(s) that are no "
                                    "kube_control_plane or kube_node host of this run (n9)")
    assert not any("n9" in c["args"] for c in run["calls"])
