"""`ufcctl lab up` from an install that cannot serve what the lab's deploy downloads (a plain
`pip install .`: no tests/lab_standins) is refused before anything is made, naming what to install; a
failed download in a run names its URL (issue 42)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ufcctl.cli.main import cli
from ufcctl.engine.run_events import _message
from ufcctl.lab import emulators


def test_lab_up_without_the_emulator_is_refused_naming_the_install(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(emulators, "CHECKOUT", tmp_path)  # a wheel's site-packages: no tests/ beside it
    monkeypatch.setattr(emulators.require_npu_emulator, "__defaults__", (tmp_path,))
    import ufcctl.lab.cli as lab_cli

    monkeypatch.setattr(lab_cli, "lab_up", lambda *a, **k: pytest.fail("the lab was touched"))
    result = CliRunner().invoke(cli, ["lab", "up"])
    assert result.exit_code == 2, result.output
    assert "has no lab NPU emulator" in result.output and "pip install -e '.[test]'" in result.output


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
