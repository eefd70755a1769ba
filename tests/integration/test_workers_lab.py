"""Worker nodes on a real container lab: containerd runs on every worker, each worker joined the cluster
exactly once through the VIP, a failed join fails only its node and `--retry-failed` completes it,
kill -9 during the node phase loses nothing and resume redoes no joined node, and `add-nodes` touches
only the new worker (and the first control plane, for the join token).

On the default (emulated) lab the joins run against the LAB KUBE EMULATOR (tests/lab_standins/
kube_emulator: kubeadm/kubelet stand-ins with the real names, served from the lab mirror, whose join
checks the endpoint's TLS against the cluster CA, the token and the CA hash), and the tests read its join
records and inject its faults. On `lab up --kube real` the same tests read what the real kubeadm and
kubelet leave and make the real join fail or hang (tests/helpers/real_cluster.py). containerd is
Debian's, for real. The lab is the test-owned stack shared with the deploy, etcd, NFS and VIP modules
(tests/integration/conftest.py); this module runs last of them (file order) and grows the lab by one
worker at its end."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import real_cluster
from tests.helpers.lab import STACK_LAB, STACK_SUBNET, STACK_WORKERS, UFCCTL, Stack, kill_9_when, ufcctl
from tests.lab_standins.kube_emulator.lab import joins, registered_nodes, write_faults
from ufcctl.app.inventory import load_inventory
from ufcctl.lab.layout import KUBE_REAL

pytestmark = pytest.mark.integration

LAB = STACK_LAB
WORKERS = [f"{LAB}-w{i:02d}" for i in range(1, STACK_WORKERS + 1)]
NEW_WORKER = f"{LAB}-w{STACK_WORKERS + 1:02d}"
CONTROL_PLANE = f"{LAB}-cp1"


@pytest.fixture(scope="module")
def lab(stack: Stack) -> Iterator[Stack]:
    stack.require_deployed()
    yield stack
    if stack.kube != KUBE_REAL:
        for worker in WORKERS:  # never leave an injected fault behind
            write_faults(worker, None)


def _podman(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["podman", *args], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert not check or proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _worker_joins(stack: Stack, worker: str) -> int:
    if stack.kube == KUBE_REAL:
        return real_cluster.kubelet_bootstraps(worker, stack.env)
    return sum(1 for j in joins(worker) if j.get("kind") == "worker")


def _counts(stack: Stack, hosts: list[str]) -> dict[str, int]:
    return {h: _worker_joins(stack, h) for h in hosts}


def _registered(stack: Stack) -> dict[str, int]:
    """Node name -> registrations: the emulator counts them; the real API holds one Node per name."""
    if stack.kube == KUBE_REAL:
        return dict.fromkeys(real_cluster.nodes(CONTROL_PLANE, stack.env), 1)
    return registered_nodes(CONTROL_PLANE, env=stack.env)


@contextmanager
def _join_fault(stack: Stack, worker: str, fault: str) -> Iterator[None]:
    """The worker's next join fails ("fail") or hangs ("hang") while the block runs."""
    if stack.kube == KUBE_REAL:
        vip = str(load_inventory(stack.inventory).hosts[worker].vars["ufc_vip"])
        with (real_cluster.join_refused(worker, stack.env) if fault == "fail"
              else real_cluster.vip_unreachable(worker, vip, stack.env)):
            yield
        return
    write_faults(worker, {"join": fault})
    try:
        yield
    finally:
        write_faults(worker, None)


def _reset(stack: Stack, worker: str) -> None:
    """Make a joined worker unjoined again, as `kubeadm reset` would: it removes the kubelet's kubeconfig,
    the cluster CA it wrote (preflight's FileAvailable--etc-kubernetes-pki-ca.crt refuses a join over
    it) and the kubelet's configuration (the emulator keeps its join log; the Node stays registered).
    On the real lab the Node is deleted too, as an operator would: the real kubeadm refuses to join a
    name whose Node is still Ready. And the kubelet's current client certificate goes (kubeadm reset
    empties /var/lib/kubelet): a kubelet that finds a valid one skips the TLS bootstrap, which is what
    counts a real join; the dated certificates of earlier joins stay, so the count goes on."""
    _podman("exec", worker, "sh", "-c", "systemctl stop kubelet; rm -rf /etc/kubernetes/kubelet.conf "
            "/etc/kubernetes/bootstrap-kubelet.conf /etc/kubernetes/pki /var/lib/kubelet/config.yaml "
            "/var/lib/kubelet/kubeadm-flags.env /var/lib/kubelet/pki/kubelet-client-current.pem",
            env=stack.env)
    if stack.kube == KUBE_REAL:
        real_cluster.delete_node(CONTROL_PLANE, worker, stack.env)


def _json(proc: subprocess.CompletedProcess[str]) -> dict:
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"no JSON (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def _states(data: dict) -> dict[str, tuple[str, str | None]]:
    return {n["host"]: (n["state"], n["reason"]) for n in data["nodes"]}


def _nodes_phase(stack: Stack, *extra: str) -> tuple[int, dict]:
    proc = ufcctl(["deploy", "--inventory", str(stack.inventory), "--phase", "nodes", "--output", "json",
                   *extra], stack.env)
    data = _json(proc)
    return proc.returncode, data["nodes"]


def test_every_worker_joined_once_through_the_vip_and_containerd_runs(lab: Stack) -> None:
    """After the first deploy, a second and a check-mode deploy (test_deploy_lab ran them before)."""
    inventory = load_inventory(lab.inventory)
    vip = str(inventory.hosts[WORKERS[0]].vars["ufc_vip"])
    real = real_cluster.nodes(CONTROL_PLANE, lab.env) if lab.kube == KUBE_REAL else {}
    for worker in WORKERS:
        tor = inventory.hosts[worker].vars.get("npu_tor_id")
        if lab.kube == KUBE_REAL:
            assert real_cluster.kubelet_bootstraps(worker, lab.env) == 1, worker
            assert real_cluster.joined_endpoint(worker, lab.env).startswith(f"{vip}:"), worker
            labels = real[worker]["metadata"]["labels"]
        else:
            worker_joins = [j for j in joins(worker) if j.get("kind") == "worker"]
            assert len(worker_joins) == 1, (worker, worker_joins)
            assert worker_joins[0]["endpoint"].startswith(f"{vip}:"), worker_joins[0]
            assert worker_joins[0]["node"] == worker
            labels = worker_joins[0]["labels"]
        # registered with its ToR label: the CNI's BGP peer for that ToR selects it (roles/cni)
        assert tor is None or labels.get("npu-tor-id") == str(tor), (worker, labels)
        active = _podman("exec", worker, "systemctl", "is-active", "containerd", "kubelet", env=lab.env)
        assert active.stdout.split() == ["active", "active"], (worker, active.stdout)
        version = _podman("exec", worker, "ctr", "version", env=lab.env).stdout
        assert "Server:" in version and "Version:" in version.split("Server:")[1], version
        config = _podman("exec", worker, "containerd", "config", "dump", env=lab.env).stdout
        assert "SystemdCgroup = true" in config and 'config_path = "/etc/containerd/certs.d"' in config
        if worker in inventory.group_hosts("npu_node"):
            assert 'default_runtime_name = "ascend"' in config, worker
            assert "Ascend-Docker-Runtime/ascend-docker-runtime" in config, worker
    registered = _registered(lab)
    assert {w: registered.get(w) for w in WORKERS} == dict.fromkeys(WORKERS, 1), registered


def test_a_failed_join_fails_only_its_worker_and_retry_failed_completes_it(lab: Stack) -> None:
    broken = WORKERS[1]
    _reset(lab, broken)
    before = _counts(lab, WORKERS)
    with _join_fault(lab, broken, "fail"):  # a budget above one node in three: "failed", not stopped
        rc, data = _nodes_phase(lab, "--max-fail", "50%")
    states = _states(data)
    assert rc == 1 and data["status"] == "failed", (data["status"], data["message"], states)
    # the emulated join fails in kubeadm; on the real lab ufcctl's own preflight names the port first
    failure = "TCP port 10250 (kubelet) is in use" if lab.kube == KUBE_REAL else "kubeadm join"
    assert states[broken][0] == "failed" and failure in (states[broken][1] or ""), states[broken]
    assert all(states[w][0] == "done" for w in WORKERS if w != broken), states
    assert _counts(lab, WORKERS) == before  # the failed join recorded nothing; the others not rejoined
    proc = ufcctl(["resume", data["run_id"], "--retry-failed", "--output", "json"], lab.env)
    resumed = _json(proc)
    assert proc.returncode == 0, (resumed.get("message"), _states(resumed))
    assert _states(resumed)[broken][0] == "done"
    assert _counts(lab, WORKERS) == {**before, broken: before[broken] + 1}


def _newest_run(stack: Stack, earlier: set[str]) -> str | None:
    proc = ufcctl(["runs", "--output", "json"], stack.env)
    fresh = [r for r in json.loads(proc.stdout) if r["run_id"] not in earlier and r["kind"] == "deploy-nodes"]
    return fresh[0]["run_id"] if fresh else None


def test_kill_9_during_the_node_phase_then_resume_redoes_no_joined_node(lab: Stack) -> None:
    hung = WORKERS[2]
    _reset(lab, hung)
    before = _counts(lab, WORKERS)
    earlier = {r["run_id"] for r in json.loads(ufcctl(["runs", "--output", "json"], lab.env).stdout)}
    run_id = None
    try:
        with _join_fault(lab, hung, "hang"):
            proc = subprocess.Popen(
                [UFCCTL, "deploy", "--inventory", str(lab.inventory), "--phase", "nodes", "--output", "json"],
                env=lab.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)

            def in_join() -> bool:  # the other workers are done and the hung one is in its join
                nonlocal run_id
                run_id = run_id or _newest_run(lab, earlier)
                return bool(run_id) and _podman("exec", hung, "pgrep", "-f", "kubeadm join", env=lab.env,
                                                check=False).returncode == 0

            kill_9_when(proc, in_join, "the hung worker's join")
    finally:  # the orphaned join: the orphaned Ansible process sees its task fail and ends
        _podman("exec", hung, "pkill", "-f", "kubeadm join", env=lab.env, check=False)
    assert run_id is not None
    resumed_proc = ufcctl(["resume", run_id, "--output", "json"], lab.env)
    resumed = _json(resumed_proc)
    assert resumed_proc.returncode == 0, (resumed.get("message"), _states(resumed))
    assert {s for s, _ in _states(resumed).values()} == {"done"}
    # every worker joined at most once more in all: the hung one once, the others not again
    assert _counts(lab, WORKERS) == {**before, hung: before[hung] + 1}


def _run_dirs(stack: Stack) -> set[Path]:
    runs = Path(stack.env["UFC_STATE_DIR"]) / "runs"
    return set(runs.iterdir()) if runs.exists() else set()


def test_add_nodes_touches_only_the_new_worker(lab: Stack) -> None:
    up = ufcctl(["lab", "up", "--nodes", str(STACK_WORKERS + 1), "--subnet", STACK_SUBNET], lab.env)
    assert up.returncode == 0, up.stdout + up.stderr
    before = _counts(lab, WORKERS)
    dirs = _run_dirs(lab)
    proc = ufcctl(["add-nodes", "--inventory", str(lab.inventory), "--limit", NEW_WORKER, "--output", "json"],
                  lab.env)
    data = _json(proc)
    assert proc.returncode == 0, (data.get("message"), _states(data), proc.stderr[-2000:])
    assert [n["host"] for n in data["nodes"]] == [NEW_WORKER] and data["status"] == "done"
    # Ansible's per-host recap of every run add-nodes made: the join token on the first control plane,
    # then the node's own work on the new worker, and nothing anywhere else
    contacted: dict[str, set[str]] = {}
    for directory in _run_dirs(lab) - dirs:
        summary = directory / "summary.json"
        if summary.is_file():
            recap = json.loads(summary.read_text())
            contacted[recap.get("playbook", directory.name)] = set(recap["hosts"])
    assert contacted == {"join-token.yml": {CONTROL_PLANE}, "deploy-nodes.yml": {NEW_WORKER}}, contacted
    assert _counts(lab, WORKERS) == before and _worker_joins(lab, NEW_WORKER) == 1
    registered = _registered(lab)
    assert registered.get(NEW_WORKER) == 1, registered
