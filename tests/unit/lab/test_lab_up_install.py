"""`ufcctl lab up` from an install that cannot serve what the lab's deploy downloads (a plain
`pip install .`: no tests/lab_standins) is refused before anything is made, naming what to install,
unless `--allow-no-mirror` asks for a lab for check mode (CI's wheel test); a failed download in a run
names its URL (issue 42)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.integration.test_wheel_install import LAB_UP_ARGS
from ufcctl.cli import lab as lab_cli
from ufcctl.cli.main import cli
from ufcctl.engine.run_events import _message
from ufcctl.lab import emulators


def test_lab_up_without_the_emulator_is_refused_naming_the_install(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(emulators, "CHECKOUT", tmp_path)  # a wheel's site-packages: no tests/ beside it
    monkeypatch.setattr(lab_cli, "lab_up", lambda *a, **k: pytest.fail("the lab was touched"))
    result = CliRunner().invoke(cli, ["lab", "up", "--nodes", "1", "--subnet", "10.89.73.0/24"])
    assert result.exit_code == 2, result.output
    assert "has no lab NPU emulator" in result.output and "pip install -e '.[test]'" in result.output
    assert "--allow-no-mirror" in result.output  # the way to the check-mode lab is named too


class FakeUp:
    """lab_up as far as the CLI sees it: records the call, returns a lab with the emulator skipped."""

    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    def __call__(self, settings: object, _notify: object, **kwargs: object) -> object:
        self.calls.append(kwargs)
        return "up"


@pytest.mark.parametrize(("args", "emulator", "exit_code", "note"), [
    (LAB_UP_ARGS, False, 0, True),  # CI's wheel test (its lab is for deploy --check only)
    (["lab", "up", "--allow-no-mirror"], False, 0, True),
    (["lab", "up"], True, 0, False),  # a checkout: the mirror is there, nothing to allow
    (["lab", "up", "--allow-no-mirror"], True, 0, False),
    (["lab", "up"], False, 2, False),
], ids=["wheel-test-args", "allowed", "checkout", "checkout-flag-no-effect", "refused"])
def test_a_lab_without_a_mirror_only_when_asked_for(tmp_path: Path, monkeypatch, args: list[str],
                                                     emulator: bool, exit_code: int, note: bool) -> None:
    if emulator:
        (tmp_path / emulators.NPU_EMULATOR_DIR).mkdir(parents=True)
        (tmp_path / emulators.NPU_EMULATOR_DIR / "__main__.py").write_text("")
    monkeypatch.setattr(emulators, "CHECKOUT", tmp_path)
    up = FakeUp()
    monkeypatch.setattr(lab_cli, "lab_up", up)
    monkeypatch.setattr(lab_cli, "_print_up", lambda result: None)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == exit_code, result.output
    assert len(up.calls) == (exit_code == 0)  # refused: nothing touched
    assert ("no package mirror" in result.output) is note


@pytest.mark.parametrize(("result", "shown"), [
    ({"msg": "Request failed", "url": "http://10.88.0.5:8080/kube/kubeadm_1.31.4_amd64.deb"},
     "Request failed (URL http://10.88.0.5:8080/kube/kubeadm_1.31.4_amd64.deb)"),
    ({"msg": "Request failed", "url": "https://user:pw@mirror.example/x.deb"},
     "Request failed (URL https://user:***@mirror.example/x.deb)"),
    ({"msg": "HTTP Error 404 from https://m.example/a", "url": "https://m.example/a"},
     "HTTP Error 404 from https://m.example/a"),
], ids=["get-url", "credentials-masked", "already-named"])
def test_a_failed_download_names_its_url(result: dict[str, object], shown: str) -> None:
    assert _message(result) == shown
