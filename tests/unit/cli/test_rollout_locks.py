"""Two rollouts or deploys on the same nodes: the second exits 2 naming the first; kill -9 frees them.

The first rollout is a real `ufcctl upgrade-drivers` process whose Ansible engine is replaced by
one that blocks, so its nodes stay held until the test kills it with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufcctl.cli.main import cli
from ufcctl.engine.locks import hold_nodes
from ufcctl.engine.run_result import HostResult, RunResult

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # tests.helpers is imported from the repository root
    sys.path.insert(0, str(ROOT))

from tests.helpers.fake_ansible import FakeAnsible  # noqa: E402
from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory  # noqa: E402

MARKER = "Report the node done to the rollout engine"

# `ufcctl upgrade-drivers ...` whose engine touches a file when its first run starts, then blocks.
_BLOCKED_ROLLOUT = """
import sys, time
from pathlib import Path
import ufcctl.rollout.runs as app
STARTED = Path(sys.argv[1])
def blocked(playbook, hosts, options, *, run_id, observer, cancel, env, on_result=None):
    STARTED.touch()
    time.sleep(600)
app.run_playbook = blocked
from ufcctl.cli.main import main
sys.argv = ["ufcctl", *sys.argv[2:]]
main()
"""


def _done_engine(calls: list[list[str]]):  # type: ignore[no-untyped-def]
    """run_playbook's double for deploy (no gate: every host reports) and for rollouts (FakeAnsible)."""
    fake = FakeAnsible(marker=MARKER)

    def run(playbook, hosts, options, *, run_id, observer, cancel=None, env=None, on_result=None):  # type: ignore[no-untyped-def]
        calls.append([h.name for h in hosts])
        if env:
            return fake(playbook, hosts, options, run_id=run_id, observer=observer, cancel=cancel, env=env)
        for h in hosts:
            observer.host_task_done(run_id, h.name, MARKER, "changed", None)
        return RunResult(run_id, playbook.name, "successful", 0, {h.name: HostResult(h.name, changed=1, ran=1)
                                                                   for h in hosts}, Path("/x"), 0.1)
    return run


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    return write_cluster_inventory(tmp_path / "inv", ClusterShape(npu_nodes=16, nodes_per_tor=4), "explicit")


def _start_blocked(env: Path, tmp_path: Path) -> subprocess.Popen[str]:
    started = tmp_path / "started"
    proc = subprocess.Popen(
        [sys.executable, "-c", _BLOCKED_ROLLOUT, str(started),
         "upgrade-drivers", "-i", str(env), "--batch", "8"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path,
    )
    deadline = time.monotonic() + 120  # hang guard only
    while not started.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the first rollout did not start: {proc.communicate()[1]}")
        time.sleep(0.05)
    return proc


def _kill_9(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def _only_run_id() -> str:
    runs = json.loads(CliRunner().invoke(cli, ["runs", "--output", "json"]).output)
    assert len(runs) == 1
    return str(runs[0]["run_id"])


def test_second_rollout_is_refused_and_kill_9_lets_resume_finish(env: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr("ufcctl.rollout.runs.run_playbook", _done_engine(calls))
    monkeypatch.setattr("ufcctl.app.deploy.run_playbook", _done_engine(calls))
    first = _start_blocked(env, tmp_path)
    try:
        run_id = _only_run_id()
        runner = CliRunner()
        dry = runner.invoke(cli, ["upgrade-drivers", "-i", str(env), "--batch", "4", "--dry-run"])
        assert dry.exit_code == 2, dry.output
        assert f"held by run {run_id} (pid {first.pid}" in dry.output
        assert f"upgrade-drivers -i {env} --batch 8" in dry.output and "Hint: " in dry.output
        again = runner.invoke(cli, ["resume", run_id])
        assert again.exit_code == 2 and f"run {run_id} is already being run" in again.output
        deploy = runner.invoke(cli, ["deploy", "-i", str(env), "--limit", "npu00003"])
        assert deploy.exit_code == 2
        assert f"1 of the 1 node(s) of this run are held by run {run_id}" in deploy.output
        other = runner.invoke(cli, ["deploy", "-i", str(env), "--limit", "cp1"])  # not one of its nodes
        assert other.exit_code == 0, other.output
        # the refused runs never reached Ansible; the cluster phase contacts cp1 only (--limit), the
        # workers' vars going along for the add-ons
        assert len(calls) == 1 and calls[0][0] == "cp1" and "npu00003" in calls[0]
        plan = runner.invoke(cli, ["plan", "upgrade-drivers", "-i", str(env), "--batch", "8"])
        assert plan.exit_code == 0  # a plan touches nothing and takes no lock
    finally:
        _kill_9(first)
    resumed = CliRunner().invoke(cli, ["resume", run_id, "--output", "json"])
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.output)["counts"]["done"] == 16
    assert not list((tmp_path / "state" / "locks").glob("*.lock"))


def test_a_deploy_holding_nodes_refuses_a_rollout(env: Path, tmp_path: Path) -> None:
    with hold_nodes("deploy-1", ["npu00001", "cp1"], directory=tmp_path / "state" / "locks",
                    command="ufcctl deploy -i lab"):
        result = CliRunner().invoke(cli, ["upgrade-drivers", "-i", str(env), "--batch", "8"])
    assert result.exit_code == 2
    assert "1 of the 16 node(s) of this run are held by run deploy-1" in result.output
    assert "ufcctl deploy -i lab): npu00001" in result.output
    assert CliRunner().invoke(cli, ["runs", "--output", "json"]).output.strip() == "[]"  # no run recorded
