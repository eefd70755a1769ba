"""Inventory values and flags that become controller paths: plain names within the file system's
limits, refused as one `Error:` line (exit 2), never an OSError or a path outside the state directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from ufcctl.cli.main import cli


@pytest.fixture()
def inv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # `ufcctl init` writes ./inventories/ when the fix is missing
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a playbook run was started")

    monkeypatch.setattr("ufcctl.app.deploy.run_playbook", refuse)
    monkeypatch.setattr("ufcctl.rollout.runs.run_playbook", refuse)
    return write_cluster_inventory(tmp_path / "inv", ClusterShape(npu_nodes=4, nodes_per_tor=4), "explicit")


def _run(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    return result


# (value of ufc_cluster_name in group_vars/all, refused?)
CLUSTER_NAMES = [
    pytest.param("prod-a", False, id="plain"),
    pytest.param("a" * 63, False, id="63-chars"),
    pytest.param("a" * 64, True, id="64-chars"),
    pytest.param("a" * 300, True, id="300-chars"),
    pytest.param("../../etc", True, id="dotdot-slash"),
    pytest.param("..", True, id="dotdot"),
    pytest.param("a/b", True, id="slash"),
    pytest.param('""', True, id="empty"),
    pytest.param('"a\\0b"', True, id="nul"),
    pytest.param("Prod_A", True, id="not-rfc1123"),
    pytest.param("[a, b]", True, id="a-list"),
]


@pytest.mark.parametrize(("value", "refused"), CLUSTER_NAMES)
def test_inventory_check_refuses_a_cluster_name_that_is_no_plain_name(
    inv: Path, value: str, refused: bool
) -> None:
    file = inv / "group_vars" / "all.yml"
    file.write_text((file.read_text() if file.exists() else "") + f"\nufc_cluster_name: {value}\n")
    result = _run("inventory", "check", "-i", str(inv))
    if not refused:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert "ufc_cluster_name" in flat and file.name in flat


LONG = "a" * 300
# (command, the flag's value) -> exit 2 with one Error line naming --inventory
FLAGS = [
    pytest.param(["inventory", "check", "-i", LONG], id="check-300-char-name"),
    pytest.param(["deploy", "--check", "-i", LONG], id="deploy-300-char-name"),
    pytest.param(["etcd", "status", "-i", LONG], id="etcd-300-char-name"),
    pytest.param(["plan", "upgrade-drivers", "--batch", "2", "-i", f"dir/{LONG}"], id="plan-long-component"),
    pytest.param(["deploy", "--check", "-i", "/x" * 2100], id="deploy-path-past-path-max"),
    pytest.param(["init", "b" * 64], id="init-64-char-name"),
]


@pytest.mark.parametrize("args", FLAGS)
def test_names_past_the_file_system_limits_are_input_errors(inv: Path, args: list[str]) -> None:
    result = _run(*args)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and ("--inventory" in errors[0] or "inventory name" in errors[0]), result.output


@pytest.mark.parametrize(("name", "refused"), [
    pytest.param("prod", False, id="plain"),
    pytest.param("x" * 64, True, id="64-chars"),
    pytest.param("bad name", True, id="space"),
])
def test_deploy_refuses_an_inventory_directory_whose_name_is_no_plain_name(
    inv: Path, tmp_path: Path, name: str, refused: bool
) -> None:
    renamed = inv.rename(tmp_path / name)
    result = CliRunner().invoke(cli, ["deploy", "--check", "-i", str(renamed)])
    if refused:
        assert result.exit_code == 2 and "its name" in result.output, result.output
    else:  # valid: it gets as far as starting a run (the test double refuses that)
        assert "a playbook run was started" in result.output, result.output


def test_deploy_of_the_working_directory_uses_its_real_name(
    inv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ufcctl.app.deploy import inventory_name
    from ufcctl.engine.runner import RunOptions

    monkeypatch.chdir(inv)
    assert inventory_name(Path("."), RunOptions()) == inv.name  # not "" or "." (manifests/<name>/)
    assert inventory_name(Path(os.curdir) / ".." / inv.name, RunOptions()) == inv.name
