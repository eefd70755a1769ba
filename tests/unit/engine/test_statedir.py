"""ufcctl changes the mode of no directory it did not create; what it creates is 0700."""

from __future__ import annotations

import stat
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ufcctl.domain.inventory.model import Host
from ufcctl.engine import locks, statedir
from ufcctl.engine.runner import RunOptions, run_playbook
from ufcctl.rollout.store import StateStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _runner(state: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    def run(**kwargs: Any) -> Any:
        return types.SimpleNamespace(status="successful", rc=0)

    monkeypatch.setitem(sys.modules, "ansible_runner", types.SimpleNamespace(run=run))
    play = state.parent / "play.yml"
    play.write_text("- hosts: all\n  tasks: []\n")
    run_playbook(play, [Host("h", {}, frozenset({"all"}))], RunOptions())
    return "runs"


def _store(state: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    StateStore(state / "state.db").close()
    return ""


def _locks(state: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    locks.hold_nodes("r1", ["h"], directory=state / "locks").release()
    return "locks"


USERS: list[Callable[[Path, pytest.MonkeyPatch], str]] = [_runner, _store, _locks]
# the state directory's mode before ufcctl runs (None: missing) -> after
MODES = [
    pytest.param(None, 0o700, id="created-0700"),
    pytest.param(0o755, 0o755, id="existing-0755-kept"),
    pytest.param(0o2770, 0o2770, id="shared-setgid-kept"),
    pytest.param(0o1777, 0o1777, id="sticky-kept"),
    pytest.param(0o750, 0o750, id="group-readable-kept"),
]


@pytest.mark.parametrize(("before", "after"), MODES)
@pytest.mark.parametrize("use", USERS, ids=[u.__name__.strip("_") for u in USERS])
def test_an_existing_state_directory_keeps_its_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use: Callable[[Path, pytest.MonkeyPatch], str],
    before: int | None, after: int,
) -> None:
    state = tmp_path / "ufc"
    monkeypatch.setenv("UFC_STATE_DIR", str(state))
    if before is not None:
        state.mkdir()
        state.chmod(before)
    sub = use(state, monkeypatch)
    assert _mode(state) == after
    if sub:  # the subdirectory ufcctl made itself is private (setgid inherited from a shared parent)
        assert _mode(state / sub) & 0o777 == 0o700


@pytest.mark.parametrize("before", [0o750, 0o2770], ids=["0750", "setgid-2770"])
def test_an_existing_subdirectory_keeps_its_mode(tmp_path: Path, before: int) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    runs.chmod(before)
    assert statedir.ensure_private_dir(runs) == runs
    assert _mode(runs) == before
    fresh = statedir.ensure_private_dir(tmp_path / "fresh")
    assert _mode(fresh) & 0o777 == 0o700


def test_missing_parents_of_a_private_dir_are_private_too(tmp_path: Path) -> None:
    """`lab up` or `lab image` may be the first to write under .ufc/: .ufc itself must be 0700 then too
    (mkdir(parents=True) makes parents with the umask's mode, 0755)."""
    from ufcctl.engine import statedir as sd

    target = tmp_path / "fresh" / ".ufc" / "lab"
    sd.ensure_private_dir(target)
    for path in (target, target.parent, target.parent.parent):
        assert path.stat().st_mode & 0o777 == 0o700, path
