"""Files ufcctl writes on the controller (issue 42): every writer goes through engine/files.py, so a
link planted at a file's name is replaced or refused, never written through; files are 0600 (the
checkout's generated vars 0644) and missing parents 0700 whatever the umask; lock files are never
truncated nor followed; a full disk is this machine's, named, not an internal error."""

from __future__ import annotations

import errno
import os
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ufcctl.app import role_vars
from ufcctl.domain.inventory.model import Host
from ufcctl.engine import files as controller_files
from ufcctl.engine import locks, runner
from ufcctl.engine.run_events import EventSink
from ufcctl.engine.run_inventory import write_inventory
from ufcctl.errors import InputError, RunFailed, UfcError
from ufcctl.lab import image, lab
from ufcctl.lab.settings import LabSettings

VICTIM_TEXT = "root-owned file\n"


@pytest.fixture
def umask0() -> Iterator[None]:
    old = os.umask(0)
    yield
    os.umask(old)


def _run_inventory(base: Path) -> Path:
    path = base / "run" / "inventory" / "hosts.json"
    write_inventory(path, [Host("w1", {"x": 1}, frozenset({"all", "kube_node"}))])
    return path


def _runner_settings(base: Path) -> Path:
    runner._write_settings(base / "run")
    return base / "run" / "env" / "settings"


def _lab_inventory(base: Path) -> Path:
    lab._write_files(base / "run" / "inv", {"group_vars/all.yml": "a: 1\n"})
    return base / "run" / "inv" / "group_vars" / "all.yml"


def _role_vars(base: Path) -> Path:
    (name,) = role_vars.GENERATED
    role_vars.write(base / "run")
    return base / "run" / name


# writer -> the file it writes under base, and that file's mode
WRITERS: list[tuple[str, Callable[[Path], Path], Callable[[Path], Path], int]] = [
    ("run-inventory", _run_inventory, lambda b: b / "run" / "inventory" / "hosts.json", 0o600),
    ("runner-settings", _runner_settings, lambda b: b / "run" / "env" / "settings", 0o600),
    ("lab-inventory", _lab_inventory, lambda b: b / "run" / "inv" / "group_vars" / "all.yml", 0o600),
    ("generated-role-vars", _role_vars, lambda b: b / "run" / next(iter(role_vars.GENERATED)), 0o644),
]


def _victim(base: Path) -> Path:
    victim = base / "victim"
    victim.write_text(VICTIM_TEXT)
    return victim


@pytest.mark.parametrize(("write", "where", "mode"), [w[1:] for w in WRITERS], ids=[w[0] for w in WRITERS])
def test_a_link_at_the_name_is_replaced_never_written_through(tmp_path: Path, write, where, mode) -> None:
    victim = _victim(tmp_path)
    target = where(tmp_path)
    target.parent.mkdir(parents=True)
    target.symlink_to(victim)
    written = write(tmp_path)
    assert victim.read_text() == VICTIM_TEXT
    assert not written.is_symlink() and written.read_text() != VICTIM_TEXT


@pytest.mark.parametrize(("write", "mode"), [(w[1], w[3]) for w in WRITERS], ids=[w[0] for w in WRITERS])
def test_files_and_new_parents_are_private_under_umask_0(tmp_path: Path, umask0: None, write, mode) -> None:
    written = write(tmp_path)
    assert written.stat().st_mode & 0o777 == mode
    for parent in written.relative_to(tmp_path).parents:
        if parent != Path("."):
            assert (tmp_path / parent).stat().st_mode & 0o777 == 0o700, parent


@pytest.mark.parametrize("write", [w[1] for w in WRITERS], ids=[w[0] for w in WRITERS])
def test_a_full_disk_is_this_machines_named_not_an_internal_error(tmp_path: Path, monkeypatch, write) -> None:
    def full(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(controller_files, "write_atomically", full)
    with pytest.raises(RunFailed, match=r"on this machine \(the controller\): No space left") as caught:
        write(tmp_path)
    assert "no node is at fault" in (caught.value.hint or "")


def _labs_lock(base: Path, _: pytest.MonkeyPatch) -> Path:
    with lab._lab_lock(LabSettings(state=base)):
        pass
    return base / "labs.lock"


def _image_lock(base: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(base))  # /tmp, where anyone may plant a name
    with image._image_lock():
        pass
    return base / "ufcctl-lab-image.lock"


def _node_lock_registry(base: Path, _: pytest.MonkeyPatch) -> Path:
    with locks._registry(base):
        pass
    return base / locks.REGISTRY


def _failures_log(base: Path, _: pytest.MonkeyPatch) -> Path:
    EventSink("r1", base, None).close()
    return base / "failures.jsonl"


# opener -> the file it opens under base
OPENERS: list[tuple[str, Callable[[Path, pytest.MonkeyPatch], Path], str]] = [
    ("labs-lock", _labs_lock, "labs.lock"),
    ("lab-image-lock-in-tmp", _image_lock, "ufcctl-lab-image.lock"),
    ("node-lock-registry", _node_lock_registry, locks.REGISTRY),
    ("run-failures-log", _failures_log, "failures.jsonl"),
]
PLANTS = [("link", lambda path, victim: path.symlink_to(victim)), ("fifo", lambda path, _: os.mkfifo(path))]


@contextmanager
def _hang_guard(seconds: int = 20) -> Iterator[None]:
    """A planted FIFO made the old open() wait forever for a reader: fail instead of hanging."""
    def expired(*_: object) -> None:
        raise TimeoutError("the open hung")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("plant", [p[1] for p in PLANTS], ids=[p[0] for p in PLANTS])
@pytest.mark.parametrize(("opener", "name"), [o[1:] for o in OPENERS], ids=[o[0] for o in OPENERS])
def test_a_planted_link_or_fifo_at_a_lock_or_log_is_refused(tmp_path: Path, monkeypatch, opener, name,
                                                            plant) -> None:
    victim = _victim(tmp_path)
    base = tmp_path / "dir"
    base.mkdir()
    plant(base / name, victim)
    with _hang_guard(), pytest.raises(InputError, match=f"{name} is a link, a FIFO or a device"):
        opener(base, monkeypatch)
    assert victim.read_text() == VICTIM_TEXT


@pytest.mark.parametrize(("opener", "name"), [o[1:] for o in OPENERS], ids=[o[0] for o in OPENERS])
def test_a_lock_or_log_is_opened_without_truncating_and_0600(tmp_path: Path, umask0: None, monkeypatch,
                                                              opener, name) -> None:
    (tmp_path / name).write_text("kept\n")
    (tmp_path / name).chmod(0o600)
    assert opener(tmp_path, monkeypatch).read_text() == "kept\n"
    fresh = tmp_path / "fresh"
    assert opener(fresh, monkeypatch).stat().st_mode & 0o777 == 0o600
    assert fresh.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize(("err", "kind", "words"), [
    (errno.ENOSPC, RunFailed, "on this machine (the controller)"),
    (errno.EDQUOT, RunFailed, "on this machine (the controller)"),
    (errno.EROFS, InputError, "cannot write"),
    (errno.EIO, RunFailed, "on this machine (the controller)"),
], ids=["enospc", "edquot", "erofs", "eio"])
def test_write_error_names_the_file_and_whose_disk(err: int, kind: type[UfcError], words: str) -> None:
    made = controller_files.write_error(Path("/s/runs/r1/summary.json"), OSError(err, os.strerror(err)))
    assert isinstance(made, kind)
    assert words in made.message and "/s/runs/r1/summary.json" in made.message


def test_a_parent_that_cannot_be_made_for_want_of_space_is_this_machines(tmp_path: Path, monkeypatch) -> None:
    def full(self: Path, mode: int = 0o777) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "mkdir", full)
    with pytest.raises(RunFailed, match=r"on this machine \(the controller\): No space left"):
        _run_inventory(tmp_path)
