"""`ufcctl reset`: the inventory's name typed (or --confirm NAME) before anything runs; a wrong or missing
name is exit 2 with one line and no Ansible run; --check runs in check mode without the question."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from ufcctl.cli.main import cli
from ufcctl.engine.run_result import HostResult, RunResult


@pytest.fixture()
def inv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    return write_cluster_inventory(tmp_path / "prod", ClusterShape(npu_nodes=3, nodes_per_tor=4), "explicit")


@pytest.fixture()
def runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def run(playbook: Path, hosts: list, options: Any, **kw: Any) -> RunResult:
        seen.append({"playbook": playbook.name, "hosts": [h.name for h in hosts], "check": options.check,
                     "stamp": options.extravars.get("ufc_reset_stamp")})
        results = {h.name: HostResult(h.name, ok=1, ran=1) for h in hosts}
        return RunResult(kw.get("run_id", "r"), playbook.name, "successful", 0, results, Path("/x"), 0.1)

    monkeypatch.setattr("ufcctl.app.reset.run_playbook", run)
    return seen


@pytest.mark.parametrize("args, answer", [
    (["--confirm", "lab"], None),
    ([], "prodd\n"),
    ([], ""),  # no answer at all (end of input)
    (["--check", "--confirm", "PROD"], None),
], ids=["confirm-other-name", "typo-typed", "no-answer", "check-with-a-wrong-confirm"])
def test_a_wrong_or_missing_name_is_exit_2_and_runs_nothing(inv: Path, runs: list, tmp_path: Path,
                                                            args: list[str], answer: str | None) -> None:
    result = CliRunner().invoke(cli, ["reset", "-i", str(inv), *args], input=answer)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "is not the inventory's name 'prod': nothing was touched" in errors[0]
    assert runs == [] and not (tmp_path / "state" / "locks").exists()


def test_the_name_typed_runs_the_reset_on_every_cluster_host(inv: Path, runs: list) -> None:
    result = CliRunner().invoke(cli, ["reset", "-i", str(inv)], input="prod\n")
    assert result.exit_code == 0, result.output
    assert "Type the inventory's name to go on" in result.output
    assert len(runs) == 1 and runs[0]["playbook"] == "reset.yml" and runs[0]["check"] is False
    assert "cp1" in runs[0]["hosts"] and "npu00003" in runs[0]["hosts"] and runs[0]["stamp"]


def test_check_mode_asks_nothing_and_changes_nothing(inv: Path, runs: list) -> None:
    result = CliRunner().invoke(cli, ["reset", "-i", str(inv), "--check"])
    assert result.exit_code == 0, result.output
    assert "Type the inventory's name" not in result.output
    assert [r["check"] for r in runs] == [True]
