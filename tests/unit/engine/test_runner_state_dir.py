"""Every Ansible run ufcctl starts gets ufcctl's own state directory, absolute, whatever Ansible's cwd."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from ufcctl.domain.inventory.model import Host
from ufcctl.engine.runner import RunOptions, run_playbook


class _Stop(Exception):
    pass


def _ansible_receives(monkeypatch: pytest.MonkeyPatch, play: Path, options: RunOptions) -> dict[str, Any]:
    """What run_playbook hands ansible-runner (ansible_runner replaced by a recorder)."""
    seen: dict[str, Any] = {}

    def run(**kwargs: Any) -> None:
        seen.update(kwargs)
        raise _Stop

    monkeypatch.setitem(sys.modules, "ansible_runner", types.SimpleNamespace(run=run))
    with pytest.raises(_Stop):
        run_playbook(play, [Host("h", {}, frozenset({"all"}))], options)
    return seen


# (UFC_STATE_DIR or None, the directory ufcctl runs in -> expected; both relative to tmp_path)
CASES = [
    pytest.param("rel/state", "infra", "infra/rel/state", id="relative-against-ufcctl-cwd"),
    pytest.param("../team/.ufc", "infra/sub", "infra/team/.ufc", id="relative-with-dotdot"),
    pytest.param(None, "infra", "infra/.ufc", id="unset-is-cwd-dot-ufc"),
    pytest.param("ABS", "elsewhere", "abs/state", id="absolute-as-given"),
]


@pytest.mark.parametrize(("env_value", "cwd", "expected"), CASES)
def test_ansible_gets_the_absolute_state_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env_value: str | None, cwd: str, expected: str
) -> None:
    (tmp_path / cwd).mkdir(parents=True)
    play = tmp_path / "play.yml"
    play.write_text("- hosts: all\n  tasks: []\n")
    monkeypatch.chdir(tmp_path / cwd)
    if env_value is None:
        monkeypatch.delenv("UFC_STATE_DIR", raising=False)
    else:
        monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "abs/state") if env_value == "ABS" else env_value)
    # a caller's extra var cannot send the roles' CA keys elsewhere than ufcctl reads them back
    seen = _ansible_receives(monkeypatch, play, RunOptions(extravars={"ufc_state_dir": "/somewhere/else"}))

    want = str(tmp_path / expected)
    assert seen["extravars"]["ufc_state_dir"] == want
    assert seen["envvars"]["UFC_STATE_DIR"] == want
    assert Path(seen["private_data_dir"]).is_relative_to(want)  # ufcctl's own files too
    assert Path(want).is_absolute() and ".." not in Path(want).parts
