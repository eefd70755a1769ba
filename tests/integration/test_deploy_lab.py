"""`ufcctl deploy` on a real container lab: green, idempotent (0 changed), honest check mode, bad input
touches nothing. The lab is the test-owned stack shared with the etcd, NFS and VIP modules (its own
name, subnet, inventory and state directories; see tests/integration/conftest.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.helpers.lab import Stack, deploy_json
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
    return json.dumps({h: r for h, r in data["hosts"].items() if r["status"] in ("failed", "unreachable")},
                      indent=1)[:4000]


def test_deploy_is_green_then_idempotent(stack: Stack) -> None:
    inventory, env = stack.inventory, stack.env
    first = stack.deploy  # the shared lab's first deploy (tests/integration/conftest.py)
    if first is None:
        pytest.fail(f"deploy printed no JSON (rc={stack.deploy_proc.returncode}):\n"
                    f"{stack.deploy_proc.stdout[-3000:]}\n{stack.deploy_proc.stderr[-3000:]}")
    rc = stack.deploy_proc.returncode
    assert rc == 0, _failures(first) + "\n" + "\n".join(first.get("output_tail", []))
    assert first["totals"]["failed"] == 0 and first["totals"]["unreachable"] == 0
    hosts = set(first["hosts"])
    assert len(hosts) == 4  # 3 control-plane + 1 worker, every one reached
    assert first["totals"]["changed"] > 0  # the first deploy really did work

    rc, second = _deploy(inventory, env)
    assert rc == 0, _failures(second)
    assert second["totals"]["changed"] == 0, {h: r["changed"] for h, r in second["hosts"].items()}

    rc, checked = _deploy(inventory, env, "--check")
    assert rc == 0, _failures(checked)
    assert checked["check"] is True and checked["totals"]["changed"] == 0


def _a_worker(env: dict[str, str], inventory: Path) -> str:
    workers = load_inventory(inventory).group_hosts("npu_node")
    assert workers, f"{inventory}: no npu_node host"
    return workers[0]


def test_limit_runs_only_the_chosen_hosts(lab: tuple[Path, dict[str, str]]) -> None:
    inventory, env = lab
    worker = _a_worker(env, inventory)
    # two cheap roles are enough to show which hosts a run touches (the whole deploy is tested above)
    rc, data = _deploy(inventory, env, "--limit", worker, "--tags", "preflight,node_tuning")
    assert rc == 0, _failures(data)
    assert list(data["hosts"]) == [worker]


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
