"""`ufcctl deploy` on a real container lab: green, idempotent (0 changed), honest check mode, bad input
touches nothing. The lab is the test-owned stack shared with the etcd, NFS and VIP modules (its own
name, subnet, inventory and state directories; see tests/integration/conftest.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers.lab import ROOT, STACK_WORKERS, Stack, deploy_json
from tests.helpers.lab import ufcctl as _run
from ufcctl.app.inventory import load_inventory

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lab(stack: Stack) -> tuple[Path, dict[str, str]]:
    return stack.inventory, stack.env


def _deploy(inventory: Path, env: dict[str, str], *extra: str) -> tuple[int, dict]:
    proc, data = deploy_json(inventory, env, *extra)
    if data is None:
        pytest.fail(f"deploy printed no JSON (rc={proc.returncode}):\n"
                    f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.returncode, data


def _failures(data: dict) -> str:
    cluster = data.get("cluster") or {"hosts": {}}
    bad = {h: r for h, r in cluster["hosts"].items() if r["status"] in ("failed", "unreachable")}
    nodes = data.get("nodes") or {"nodes": []}
    bad |= {n["host"]: n for n in nodes["nodes"] if n["state"] != "done"}
    return json.dumps({"failed": bad, "skipped": data.get("skipped"),
                       "output_tail": cluster.get("output_tail")}, indent=1)[:4000]


RECORD = "/var/lib/ufcctl/deploy-nodes.json"  # playbooks/deploy-nodes.yml's ufc_node_state_record
FAST_PATH = 3  # host-tasks of a node at target: the gate, the probe, the marker (end_host: the main process)


def _run_dirs(env: dict[str, str]) -> set[Path]:
    state = Path(env.get("UFC_STATE_DIR") or ".ufc")
    runs = (state if state.is_absolute() else ROOT / state) / "runs"
    return set(runs.iterdir()) if runs.exists() else set()


def _node_tasks(env: dict[str, str], before: set[Path]) -> dict[str, int]:
    """Host-tasks each worker ran in the deploy-nodes runs made since `before` (their summary.json)."""
    ran: dict[str, int] = {}
    for directory in _run_dirs(env) - before:
        summary = directory / "summary.json"
        recap = json.loads(summary.read_text()) if summary.is_file() else {}
        if recap.get("playbook") == "deploy-nodes.yml":
            ran |= {h: r["ran"] for h, r in recap["hosts"].items()}
    return ran


def _json_out(proc: subprocess.CompletedProcess[str]) -> dict:
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"no JSON (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def _has_record(host: str, env: dict[str, str]) -> bool:
    return subprocess.run(["podman", "exec", host, "test", "-e", RECORD], env=env, capture_output=True,
                          check=False).returncode == 0


def test_deploy_is_green_then_idempotent(stack: Stack) -> None:
    """Both phases: the cluster phase on the 3 control planes, the node phase on every worker through
    the fleet engine; a second deploy changes nothing in either, and check mode changes nothing."""
    inventory, env = stack.inventory, stack.env
    first = stack.deploy  # the shared lab's first deploy (tests/integration/conftest.py)
    if first is None:
        pytest.fail(f"deploy printed no JSON (rc={stack.deploy_proc.returncode}):\n"
                    f"{stack.deploy_proc.stdout[-3000:]}\n{stack.deploy_proc.stderr[-3000:]}")
    assert stack.deploy_proc.returncode == 0, _failures(first)
    inv = load_inventory(inventory)
    cluster, nodes = first["cluster"], first["nodes"]
    assert cluster["totals"]["failed"] == 0 and cluster["totals"]["unreachable"] == 0
    assert set(cluster["hosts"]) == set(inv.group_hosts("kube_control_plane"))  # workers: node phase
    assert cluster["totals"]["changed"] > 0  # the first deploy really did work
    workers = set(inv.group_hosts("kube_node")) - set(inv.group_hosts("kube_control_plane"))
    assert nodes["kind"] == "deploy-nodes" and nodes["status"] == "done", _failures(first)
    assert {n["host"] for n in nodes["nodes"]} == workers and len(workers) == STACK_WORKERS
    assert all(n["changed"] for n in nodes["nodes"])

    # Every full run leaves each worker its record, which the next run's probe compares with (the fast
    # path: the gate, one probe and the marker). The first deploy wrote them; a lab deployed by another
    # ufcctl version takes the full path once more here (another version is another input).
    rc, second = _deploy(inventory, env)
    assert rc == 0, _failures(second)
    assert second["cluster"]["totals"]["changed"] == 0, {
        h: r["changed"] for h, r in second["cluster"]["hosts"].items()}
    assert second["nodes"]["status"] == "done"
    assert [n["host"] for n in second["nodes"]["nodes"] if n["changed"]] == []
    assert all(_has_record(w, env) for w in workers)

    dirs = _run_dirs(env)
    rc, checked = _deploy(inventory, env, "--check")
    assert rc == 0, _failures(checked)
    assert checked["cluster"]["check"] is True and checked["cluster"]["totals"]["changed"] == 0
    assert checked["nodes"]["dry_run"] is True and checked["nodes"]["status"] == "done"
    assert [n["host"] for n in checked["nodes"]["nodes"] if n["changed"]] == []
    assert _node_tasks(env, dirs) == dict.fromkeys(workers, FAST_PATH)  # check mode reads the same record
    # each node's reason says which path it took (the probe's report, kept by the engine)
    assert {n["reason"] for n in checked["nodes"]["nodes"]} == {"at target (fast path)"}, checked["nodes"]

    # A changed input (here an inventory variable no role reads) takes the full path: every role runs,
    # nothing changes, and the node is recorded with the new inputs; the run after it is the fast path.
    # One worker, through add-nodes. Its record keeps the changed input: the next node phase on the lab
    # runs that worker's roles once more (nothing changes).
    worker = sorted(workers)[0]
    extra = inventory / "group_vars" / "all" / "zz-fast-path-test.yml"
    extra.write_text("ufc_fast_path_test_input: changed\n")
    add = ["add-nodes", "--inventory", str(inventory), "--limit", worker, "--output", "json"]
    try:
        for want in ("full", "fast"):
            dirs = _run_dirs(env)
            proc = _run(add, env)
            done = _json_out(proc)["nodes"]
            assert proc.returncode == 0 and [n["changed"] for n in done] == [False], proc.stdout[-3000:]
            # the full path names the input that changed (its name only), from the record's digests
            assert done[0]["reason"] == ("at target (fast path)" if want == "fast" else
                                         "full path: inputs changed since the last full run: "
                                         "ufc_fast_path_test_input"), done
            ran = _node_tasks(env, dirs)[worker]
            assert (ran > 10 * FAST_PATH) if want == "full" else (ran == FAST_PATH), (want, ran)
    finally:
        extra.unlink()


def test_limit_runs_only_the_chosen_hosts(lab: tuple[Path, dict[str, str]]) -> None:
    inventory, env = lab
    control_plane = load_inventory(inventory).group_hosts("kube_control_plane")[0]
    # two cheap roles are enough to show which hosts a run touches (the whole deploy is tested above)
    rc, data = _deploy(inventory, env, "--limit", control_plane, "--tags", "preflight,node_tuning")
    assert rc == 0, _failures(data)
    assert list(data["cluster"]["hosts"]) == [control_plane] and data["nodes"] is None


def _a_worker(env: dict[str, str], inventory: Path) -> str:
    workers = load_inventory(inventory).group_hosts("npu_node")
    assert workers, f"{inventory}: no npu_node host"
    return workers[0]


def test_bad_inventory_exits_2_and_contacts_no_host(lab: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    inventory, env = lab
    bad = tmp_path / "bad"
    shutil.copytree(inventory, bad)
    # host_vars/<host>.yml is the highest inventory precedence: the bad value is what ufcctl sees
    worker_vars = bad / "host_vars" / f"{_a_worker(env, inventory)}.yml"
    worker_vars.parent.mkdir(exist_ok=True)
    existing = yaml.safe_load(worker_vars.read_text()) if worker_vars.exists() else {}
    worker_vars.write_text(yaml.safe_dump({**(existing or {}), "npu_accelerator_type": "module-999x"}))
    runs = Path(env["UFC_STATE_DIR"]) / "runs"
    before = set(runs.iterdir()) if runs.exists() else set()
    proc = _run(["deploy", "--inventory", str(bad)], env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "module-999x" in proc.stderr and "Traceback" not in proc.stderr
    after = set(runs.iterdir()) if runs.exists() else set()
    assert after == before  # no run was started: no host was contacted
