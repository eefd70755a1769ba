"""`ufcctl remove-nodes` and `ufcctl reset` on the shared deployed lab, with the README's commands as
written: one worker is drained (the real kubectl on the first control plane, through the LAB API
STAND-IN's Eviction API), reset (the LAB KUBE EMULATOR's `kubeadm reset -f`), its kubelet and containerd
stopped and disabled, its join state wiped and its Node object deleted, its Ascend files left as they
were; the run is recorded; a second run changes nothing. Then `ufcctl add-nodes` joins it again and it
is Ready, so the lab is left whole. `ufcctl reset` runs only as far as a shared lab allows: refused on a
wrong name, and in check mode.

A stack module (tests/helpers/lab.py STACK_MODULES): its file name sorts after test_workers_lab.py, so it
runs last of them (file order on one worker, tests/integration/conftest.py) and takes a node out of no
other module's lab."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.lab import ROOT, STACK_LAB, UFCCTL, Stack, ufcctl
from ufcctl.rollout.store import StateStore

pytestmark = pytest.mark.integration

CONTROL_PLANE = f"{STACK_LAB}-cp1"
KUBECTL = ["kubectl", "--kubeconfig=/etc/kubernetes/admin.conf"]
JOIN_STATE = ("/etc/kubernetes/kubelet.conf", "/etc/kubernetes/pki", "/var/lib/kubelet")
# Ascend's node software: the NPU driver and firmware (/usr/local/Ascend/driver, npu-smi in
# /usr/local/sbin) where upgrade-drivers installed them, the Ascend Docker Runtime (/usr/local/Ascend/
# Ascend-Docker-Runtime) on every NPU worker. The README's main job installs no driver (upgrade-drivers
# does), so on the shared stack what stays is checked file by file: every file under these, unchanged.
ASCEND = ("/usr/local/Ascend", "/usr/local/sbin")


def readme_command(start: str, *, exact: bool = False) -> list[str]:
    """The README's first line starting `ufcctl <start> --inventory lab` (exact: that line and nothing
    more), as written (its comment cut)."""
    prefix = f"ufcctl {start} --inventory lab"
    for line in (ROOT / "README.md").read_text().splitlines():
        words = line.split("#", 1)[0].strip()
        if words == prefix or (not exact and words.startswith(prefix + " ")):
            return shlex.split(words)
    raise AssertionError(f"README.md has no `{prefix} ...` line")


REMOVE = readme_command("remove-nodes")
WORKER = REMOVE[REMOVE.index("--limit") + 1]
ADD = readme_command("add-nodes")


def _exec(stack: Stack, host: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", "exec", host, *argv], env=stack.env, capture_output=True, text=True,
                          timeout=120, check=False)


def _node(stack: Stack) -> dict | None:
    proc = _exec(stack, CONTROL_PLANE, *KUBECTL, "get", "node", WORKER, "-o", "json")
    if proc.returncode != 0:
        assert "NotFound" in proc.stderr, proc.stderr
        return None
    return json.loads(proc.stdout)


def _ascend(stack: Stack) -> list[str]:
    proc = _exec(stack, WORKER, "sh", "-c", f"find {' '.join(ASCEND)} -type f -exec sha256sum {{}} + | sort")
    return proc.stdout.splitlines()


def _controlled_pods(stack: Stack) -> dict[str, str]:
    """Pods on WORKER that the drain evicts (not DaemonSet ones): name -> 'namespace/deployment'."""
    proc = _exec(stack, CONTROL_PLANE, *KUBECTL, "get", "pods", "-A", "-o", "json",
                 f"--field-selector=spec.nodeName={WORKER}")
    assert proc.returncode == 0, proc.stderr
    found = {}
    for pod in json.loads(proc.stdout)["items"]:
        owner = (pod["metadata"].get("ownerReferences") or [{}])[0]
        if owner.get("kind") != "DaemonSet":
            found[pod["metadata"]["name"]] = f"{pod['metadata']['namespace']}/{owner.get('name')}"
    return found


def _newest(stack: Stack) -> tuple[str, list]:
    with StateStore(Path(stack.env["UFC_STATE_DIR"]) / "state.db") as store:
        run = store.runs("remove-nodes")[0]
        assert run.status == "done", (run.status, run.message)
        return run.run_id, store.nodes(run.run_id)


@pytest.fixture(scope="module")
def lab(stack: Stack) -> Iterator[Stack]:
    stack.require_deployed()
    assert ADD[2:] == ["--inventory", "lab", "--limit", WORKER], ADD  # the README brings back the same node
    yield stack


def test_remove_one_worker_then_again_then_add_it_back(lab: Stack) -> None:
    assert REMOVE[0] == "ufcctl" and re.fullmatch(rf"{STACK_LAB}-w\d\d", WORKER), REMOVE
    assert _node(lab) is not None
    ascend = _ascend(lab)
    # the stand-in's scheduler puts a calico-typha replica (PodDisruptionBudget maxUnavailable 1) on the
    # README's worker: its eviction goes through the Eviction API and the budget
    evicted = _controlled_pods(lab)
    assert evicted, f"no pod but DaemonSet ones on {WORKER}: the drain would evict nothing here"
    assert any("/usr/local/Ascend/" in line for line in ascend), ascend  # Ascend software to keep
    dry = ufcctl([*REMOVE[1:], "--dry-run"], lab.env)  # check mode: reads the Node, touches nothing
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    node = _node(lab)
    assert node is not None and not node["spec"].get("unschedulable")
    assert _exec(lab, WORKER, "systemctl", "is-active", "kubelet").stdout.strip() == "active"
    started = time.monotonic()
    proc = ufcctl(REMOVE[1:], lab.env)  # exactly the README's command (cwd: the checkout root)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_id, nodes = _newest(lab)
    assert [(n.host, n.state, n.changed) for n in nodes] == [(WORKER, "done", True)], nodes
    assert _node(lab) is None  # the Node object is gone
    for pod, owner in evicted.items():  # each evicted pod replaced elsewhere, its Deployment whole again
        namespace, name = owner.split("/")
        assert _exec(lab, CONTROL_PLANE, *KUBECTL, "get", "pod", "-n", namespace, pod).returncode != 0
        status = _exec(lab, CONTROL_PLANE, *KUBECTL, "rollout", "status", "-n", namespace,
                       f"deployment/{name}", "--timeout=60s")
        assert status.returncode == 0, status.stdout + status.stderr
    units = _exec(lab, WORKER, "systemctl", "is-active", "kubelet", "containerd")
    assert units.stdout.split() == ["inactive", "inactive"], units.stdout
    enabled = _exec(lab, WORKER, "systemctl", "is-enabled", "kubelet", "containerd")
    assert enabled.stdout.split() == ["disabled", "disabled"], enabled.stdout
    left = _exec(lab, WORKER, "ls", "-d", *JOIN_STATE)
    assert left.returncode != 0 and left.stdout == "", left.stdout  # every join state path is gone
    assert _ascend(lab) == ascend  # the NPU driver (where installed) and the Ascend runtime stay
    print(f"remove-nodes of one worker: {seconds:.1f} s (run {run_id})")

    again = ufcctl(REMOVE[1:], lab.env)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    second, nodes = _newest(lab)
    assert second != run_id and [(n.host, n.state, n.changed) for n in nodes] == [(WORKER, "done", False)]

    back = ufcctl(ADD[1:], lab.env)  # the lab is left whole: the worker joins again
    assert back.returncode == 0, back.stdout[-3000:] + back.stderr[-3000:]
    node = _node(lab)
    assert node is not None and not node["spec"].get("unschedulable")
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert ready.get("Ready") == "True", node["status"]
    units = _exec(lab, WORKER, "systemctl", "is-active", "kubelet", "containerd")
    assert units.stdout.split() == ["active", "active"], units.stdout


def test_reset_refuses_a_wrong_name_and_its_check_mode_touches_nothing(lab: Stack) -> None:
    """`ufcctl reset` as the README writes it, answered with a wrong name: exit 2, nothing run. Then
    `--check` (the README's line) over all nine hosts: exit 0, every node, kubelet and etcd member as
    before. The reset itself cannot run here: the lab is shared with every stack module."""
    command = readme_command("reset", exact=True)
    nodes = _exec(lab, CONTROL_PLANE, *KUBECTL, "get", "nodes", "-o", "name").stdout.split()
    runs = Path(lab.env["UFC_STATE_DIR"]) / "runs"
    before = set(runs.iterdir())
    wrong = subprocess.run([UFCCTL, *command[1:]], input="not-the-name\n", env=lab.env, cwd=ROOT,
                           capture_output=True, text=True, timeout=300, check=False)
    assert wrong.returncode == 2, wrong.stdout + wrong.stderr
    assert "is not the inventory's name 'lab': nothing was touched" in wrong.stderr
    assert set(runs.iterdir()) == before  # no Ansible run at all
    check_line = readme_command("reset")
    assert check_line[4:] == ["--check"], check_line
    check = ufcctl(check_line[1:], lab.env)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]
    assert _exec(lab, CONTROL_PLANE, *KUBECTL, "get", "nodes", "-o", "name").stdout.split() == nodes
    for host in (CONTROL_PLANE, WORKER):
        units = _exec(lab, host, "systemctl", "is-active", "kubelet", "containerd")
        assert units.stdout.split() == ["active", "active"], (host, units.stdout)
        assert _exec(lab, host, "test", "-f", "/etc/kubernetes/kubelet.conf").returncode == 0
    etcd = _exec(lab, CONTROL_PLANE, "sh", "-c", "systemctl is-active etcd-core etcd-events etcd-pods; "
                 "ls -d /var/lib/etcd-*")
    found = etcd.stdout.split()
    assert found[:3] == ["active"] * 3, etcd.stdout
    assert {"/var/lib/etcd-core", "/var/lib/etcd-events", "/var/lib/etcd-pods"} <= set(found), etcd.stdout
    assert not [d for d in found if ".reset-" in d], etcd.stdout  # no data directory moved aside
