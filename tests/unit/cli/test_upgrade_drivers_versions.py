"""`ufcctl upgrade-drivers --version/--firmware-version`: a value that is not a plain word is refused
(exit 2, naming the flag) before anything runs; a plain one reaches the role as its variable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.helpers.fake_ansible import FakeAnsible
from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from ufcctl.cli.main import cli

MARKER = "Report the node done to the rollout engine"


class _Extravars:
    """The extra vars of every Ansible process the fake saw (a list view of its calls)."""

    def __init__(self, fake: FakeAnsible):
        self.fake = fake

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter([dict(options.extravars) for _, _, options, _ in self.fake.calls])

    def __len__(self) -> int:
        return len(self.fake.calls)

    def __eq__(self, other: object) -> bool:
        return list(self) == other


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[dict[str, Any]]]:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    fake = FakeAnsible(marker=MARKER)
    monkeypatch.setattr("ufcctl.rollout.runs.run_playbook", fake)
    calls = _Extravars(fake)
    shape = ClusterShape(npu_nodes=4, nodes_per_tor=4)
    return write_cluster_inventory(tmp_path / "inv", shape, "explicit"), calls


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--version", "1.0; touch /tmp/pwned"),
        ("--version", "$(id)"),
        ("--version", "-x"),
        ("--version", "../24.1"),
        ("--version", ""),
        ("--firmware-version", "7.5 --evil"),
        ("--firmware-version", "7.5\n"),
    ],
)
def test_a_version_that_is_not_a_plain_word_exits_2_naming_the_flag(env, flag: str, value: str) -> None:
    inventory, calls = env
    result = CliRunner().invoke(cli, ["upgrade-drivers", "-i", str(inventory), "--batch", "4", flag, value])
    assert result.exit_code == 2, result.output
    assert f"Error: {flag} {value!r} is not a version" in result.output
    assert "Hint: e.g. --version 24.1.rc3" in result.output
    assert calls == []  # nothing ran


def test_plain_versions_reach_the_role(env) -> None:
    inventory, calls = env
    result = CliRunner().invoke(
        cli, ["upgrade-drivers", "-i", str(inventory), "--batch", "4", "--version", "24.1.rc3",
              "--firmware-version", "7.5.0.2.220"],
    )
    assert result.exit_code == 0, result.output
    assert calls and all(
        c["ascend_driver_version"] == "24.1.rc3" and c["ascend_driver_firmware_version"] == "7.5.0.2.220"
        for c in calls
    )
