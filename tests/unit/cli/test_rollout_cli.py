"""CLI of rollouts: plan upgrade-drivers, upgrade-drivers (engine replaced by a fake), runs, resume."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufcctl.cli.main import cli

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # tests.helpers is imported from the repository root
    sys.path.insert(0, str(ROOT))

from tests.helpers.fake_ansible import Behaviour, FakeAnsible  # noqa: E402
from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory  # noqa: E402

MARKER = "Report the node done to the rollout engine"


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    return write_cluster_inventory(tmp_path / "inv", ClusterShape(npu_nodes=24, nodes_per_tor=4), "explicit")


def fake_engine(failing: set[str]) -> FakeAnsible:
    """Test double for run_playbook: every host passes the gate and reports the marker, or fails if listed."""
    return FakeAnsible({h: Behaviour("failed") for h in failing}, marker=MARKER)


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_plan_prints_batches_and_asks_for_a_node_time(env: Path) -> None:
    result = invoke("plan", "upgrade-drivers", "-i", str(env), "--batch", "8", "--canary", "2")
    assert result.exit_code == 0, result.output
    assert "24 node(s) in 4 batch(es)" in result.output and "canary 2 first" in result.output
    assert "pass --node-seconds" in " ".join(result.output.split())  # rich wraps at 80 columns


def test_plan_json_aligned_by_tor_with_projection(env: Path) -> None:
    result = invoke("plan", "upgrade-drivers", "-i", str(env), "--batch", "6", "--by", "tor",
                    "--node-seconds", "600", "--output", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [b["size"] for b in data["batches"]] == [4, 4, 4, 4, 4, 4]  # 4-node ToRs never split
    assert data["projection"]["total_seconds"] == 4 * 600  # 24 nodes through 6 slots: 4 node-times


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--max-fail", "120%"], "not a percentage", id="bad-max-fail"),
        pytest.param(["--by", "rack"], "Invalid value for '--by'", id="bad-by"),
        pytest.param(["--canary", "99"], "canary 99", id="canary-too-big"),
    ],
)
def test_plan_rejects_bad_flags_with_exit_2(env: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["plan", "upgrade-drivers", "-i", str(env), "--batch", "4", *args])
    assert result.exit_code == 2
    assert message in result.output


def test_upgrade_runs_every_node_and_lists_the_run(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = fake_engine(set())
    monkeypatch.setattr("ufcctl.rollout.runs.run_playbook", engine)
    result = invoke("upgrade-drivers", "-i", str(env), "--batch", "8", "--output", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["status"] == "done" and data["counts"]["done"] == 24
    assert data["steps"]["drain"].startswith("skipped: no kubeconfig")
    assert sorted(engine.starts) == sorted(n["host"] for n in data["nodes"]) and engine.processes == 1
    runs = json.loads(invoke("runs", "--output", "json").output)
    assert runs[0]["run_id"] == data["run_id"] and runs[0]["counts"] == {"done": 24}


def test_failed_rollout_exits_1_and_resume_retries(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ufcctl.rollout.runs.run_playbook", fake_engine({"npu00003"}))
    result = CliRunner().invoke(cli, ["upgrade-drivers", "-i", str(env), "--batch", "8", "--max-fail", "50%"])
    assert result.exit_code == 1
    assert "1 node(s) failed: npu00003" in result.output and "ufcctl resume" in result.output
    run_id = json.loads(invoke("runs", "--output", "json").output)[0]["run_id"]
    engine = fake_engine(set())
    monkeypatch.setattr("ufcctl.rollout.runs.run_playbook", engine)
    again = invoke("resume", run_id, "--retry-failed")
    assert again.exit_code == 0, again.output
    assert list(engine.starts) == ["npu00003"] and engine.calls[0][1] == ("npu00003",)


def test_runs_when_there_are_none(env: Path) -> None:
    result = invoke("runs")
    assert result.exit_code == 0 and "no runs yet" in result.output


def test_resume_unknown_run_exits_2(env: Path) -> None:
    result = CliRunner().invoke(cli, ["resume", "upgrade-drivers-nope"])
    assert result.exit_code == 2 and "Error: no run upgrade-drivers-nope" in result.output
