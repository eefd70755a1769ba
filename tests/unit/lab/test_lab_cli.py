"""`ufcctl lab` flags: bad input exits 2 with one clear line, before podman is touched."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ufcctl.cli.main import cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["lab", "up", "--subnet", "8.8.8.0/24"], "Error: --subnet 8.8.8.0/24 is not a private range"),
        (["lab", "up", "--subnet", "10.1.2.3/24"], "Error: --subnet '10.1.2.3/24': 10.1.2.3/24 has host"),
        (["lab", "up", "--subnet", "10.1.2.0/29"], "Error: --subnet 10.1.2.0/29 is too small"),
        (["lab", "up", "--lab", "Bad_Name"], "Error: lab name 'Bad_Name' is not valid"),
        (["lab", "down", "--lab", "x-y"], "Error: lab name 'x-y' is not valid"),
        (["lab", "status", "--lab", "9lives"], "Error: lab name '9lives' is not valid"),
    ],
    ids=["public-subnet", "host-bits", "tiny-subnet", "bad-name-up", "bad-name-down", "bad-name-status"],
)
def test_bad_input_exits_2(args: list[str], message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # An empty PATH proves nothing external ran: podman would be "not found" (exit 1) otherwise.
    monkeypatch.setenv("PATH", "")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Hint:" in result.output


@pytest.mark.parametrize("args", [["lab", "up", "--nodes", "0"], ["lab", "up", "--nodes", "x"]],
                         ids=["zero", "not-a-number"])
def test_nodes_must_be_a_positive_number(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "--nodes" in result.output


def test_missing_podman_names_the_apt_package(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH
    monkeypatch.setattr("ufcctl.lab.podman.EXTRA_BIN_DIRS", ())  # nor in /usr/sbin
    result = CliRunner().invoke(cli, ["lab", "status"])
    assert result.exit_code == 1
    assert "Error: podman not found" in result.output
    assert "apt-get install podman" in result.output


def test_lab_help_lists_the_commands() -> None:
    result = CliRunner().invoke(cli, ["lab", "--help"])
    assert result.exit_code == 0
    for command in ("image", "up", "down", "status"):
        assert command in result.output


def test_kube_takes_real_or_emulated_and_reaches_lab_up(monkeypatch: pytest.MonkeyPatch) -> None:
    import ufcctl.cli.lab as lab_cli

    seen: list[str | None] = []

    def fake_up(settings, notify, workers=None, subnet=None, kube=None):
        seen.append(kube)
        raise SystemExit(0)

    monkeypatch.setattr(lab_cli, "lab_up", fake_up)
    monkeypatch.setattr(lab_cli, "require_npu_emulator", lambda allow: True)
    assert CliRunner().invoke(cli, ["lab", "up", "--kube", "real"]).exit_code == 0
    assert CliRunner().invoke(cli, ["lab", "up"], env={"UFC_LAB_KUBE": "real"}).exit_code == 0
    assert CliRunner().invoke(cli, ["lab", "up"], env={"UFC_LAB_KUBE": ""}).exit_code == 0
    assert seen == ["real", "real", None]  # None: the running lab's mode, or emulated for a new one
    bad = CliRunner().invoke(cli, ["lab", "up", "--kube", "fake"])
    assert bad.exit_code == 2 and "--kube" in bad.output
