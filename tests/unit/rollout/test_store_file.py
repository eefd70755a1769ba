"""A state database or directory ufcctl cannot use is refused with exit 2 and left exactly as found."""

from __future__ import annotations

import ctypes
import hashlib
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ufcctl.cli.main import cli
from ufcctl.rollout.store import SCHEMA_VERSION, StateFileError, StateStore

ROOT = Path(__file__).resolve().parents[3]


def _digest(directory: Path) -> dict[str, str]:
    """The directory's mode, its files and their sha256: nothing of a refused store may change, and
    no -wal/-shm file may appear beside it."""
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}
    return {".": oct(stat.S_IMODE(directory.stat().st_mode)), **files}


def _ours(path: Path) -> None:
    with StateStore(path) as store:
        nodes = [(f"h{i:04d}", i // 100, i) for i in range(3000)]
        store.create_run("r1", "upgrade-drivers", "inv", {}, nodes)


def _sql(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()


def not_sqlite(path: Path) -> None:
    path.write_text("these are my notes, not a database\n")


def foreign(path: Path) -> None:
    _sql(path, "CREATE TABLE customers (id INTEGER, name TEXT)", "INSERT INTO customers VALUES (1, 'x')")


def foreign_wal(path: Path) -> None:
    _sql(path, "PRAGMA journal_mode=WAL", "CREATE TABLE photos (id INTEGER)")


def foreign_with_meta(path: Path) -> None:
    _sql(path, "CREATE TABLE meta (key TEXT, value TEXT)", "INSERT INTO meta VALUES ('owner', 'someone')")


def newer(path: Path) -> None:
    _ours(path)
    _sql(path, f"UPDATE meta SET value = '{SCHEMA_VERSION + 1}' WHERE key = 'schema'")


def missing_tables(path: Path) -> None:
    _ours(path)
    _sql(path, "DROP TABLE nodes")


def truncated(path: Path) -> None:
    _ours(path)
    os.truncate(path, 5000)


def bad_header(path: Path) -> None:
    _ours(path)
    with open(path, "r+b") as fh:
        fh.write(b"X" * 16)


CASES = [
    pytest.param(not_sqlite, "is not an sqlite database", id="text-file"),
    pytest.param(foreign, "not ufcctl's state (no meta table; its tables: customers)", id="foreign-sqlite"),
    pytest.param(foreign_wal, "not ufcctl's state (no meta table; its tables: photos)", id="foreign-wal"),
    pytest.param(foreign_with_meta, "a meta table without a schema version", id="foreign-meta-table"),
    pytest.param(newer, f"state schema {SCHEMA_VERSION + 1}, newer than this ufcctl", id="newer-schema"),
    pytest.param(missing_tables, "lacks table(s) nodes", id="missing-table"),
    pytest.param(truncated, "is corrupt: database disk image is malformed", id="truncated"),
    pytest.param(bad_header, "is not an sqlite database", id="damaged-header"),
]


@pytest.mark.parametrize(("make", "message"), CASES)
def test_unusable_database_is_refused_untouched(tmp_path: Path, make: Callable[[Path], None],
                                                message: str) -> None:
    db = tmp_path / "state.db"
    make(db)
    tmp_path.chmod(0o755)  # a directory of the user's: not even its mode changes when refused
    before = _digest(tmp_path)
    with pytest.raises(StateFileError) as caught:
        StateStore(db)
    assert message in caught.value.message and str(db) in caught.value.message
    assert f"mv {db} {db}.bad" in (caught.value.hint or "")
    assert _digest(tmp_path) == before


@pytest.mark.parametrize(("make", "message"), CASES)
def test_cli_exits_2_with_error_and_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         make: Callable[[Path], None], message: str) -> None:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path))
    make(tmp_path / "state.db")
    before = _digest(tmp_path)
    result = CliRunner().invoke(cli, ["runs"])
    assert result.exit_code == 2, result.output
    assert f"Error: {tmp_path / 'state.db'}" in result.output or "Error: state database" in result.output
    assert message in result.output and "Hint: " in result.output and "Traceback" not in result.output
    assert _digest(tmp_path) == before


def test_damaged_page_is_refused_before_a_rollout_writes(tmp_path: Path) -> None:
    """Garbage in a table page passes the cheap checks at open; verify() (run before a rollout) and
    any read of the page refuse it as corrupt, without writing."""
    db = tmp_path / "state.db"
    _ours(db)
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        runs_page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'runs'").fetchone()[0]
    conn.close()
    with open(db, "r+b") as fh:
        fh.seek((runs_page - 1) * page_size)
        fh.write(os.urandom(page_size))
    before = _digest(tmp_path)
    store = StateStore(db)
    try:
        with pytest.raises(StateFileError, match="is corrupt"):
            store.verify()
        with pytest.raises(StateFileError, match="is corrupt"):
            store.runs()
    finally:
        store.close()
    assert _digest(tmp_path) == before


def test_an_empty_file_or_bare_header_is_initialised(tmp_path: Path) -> None:
    """What a first open killed early leaves behind (0 bytes, or a header and no table) is ours."""
    (tmp_path / "a.db").write_bytes(b"")
    _sql(tmp_path / "b.db", "PRAGMA journal_mode=WAL")
    for name in ("a.db", "b.db"):
        with StateStore(tmp_path / name) as store:
            store.create_run("r", "k", "inv", {}, [("h", 0, 0)])
            assert store.run("r") is not None


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        pytest.param("file", "is not a directory", id="state-dir-is-a-file"),
        pytest.param("under-file", "cannot create state directory", id="parent-is-a-file"),
        pytest.param("db-is-dir", "is not a regular file", id="state-db-is-a-directory"),
    ],
)
def test_unusable_state_directory_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str,
                                          message: str) -> None:
    (tmp_path / "f").write_text("x")
    paths = {"file": tmp_path / "f", "under-file": tmp_path / "f" / "state", "db-is-dir": tmp_path / "d"}
    state = paths[layout]
    if layout == "db-is-dir":
        (state / "state.db").mkdir(parents=True)
    monkeypatch.setenv("UFC_STATE_DIR", str(state))
    result = CliRunner().invoke(cli, ["runs"])
    assert result.exit_code == 2, result.output
    assert message in result.output and str(state) in result.output and "Hint: " in result.output
    assert (tmp_path / "f").read_text() == "x"


def _without_dac_override() -> None:
    """In the child, as root: drop the capabilities that let root write into any directory."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


# linux/prctl.h and linux/capability.h
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 24, 1, 2, 3


def test_unwritable_state_directory_exits_2(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o555)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "UFC_STATE_DIR": str(state),
           "PYTHONPATH": str(ROOT)}
    # root writes anywhere: its child runs without the override capabilities (still uid 0)
    demote = _without_dac_override if os.geteuid() == 0 else None
    proc = subprocess.run(
        [sys.executable, "-c", "from ufcctl.cli.main import main; main()", "runs"],
        capture_output=True, text=True, env=env, cwd=tmp_path, preexec_fn=demote, timeout=120, check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"Error: state directory {state} is not writable" in proc.stderr and "Hint: " in proc.stderr
    assert list(state.iterdir()) == []


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_state_directory_and_database_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "ufc"))
    old = os.umask(0o022)  # a usual umask: files would be 0644 without ufcctl's care
    try:
        with StateStore() as store:
            store.create_run("r", "k", "inv", {}, [("h", 0, 0)])
            files = {p.name: _mode(p) for p in (tmp_path / "ufc").iterdir()}
            assert _mode(tmp_path / "ufc") == 0o700
            assert files == {"state.db": 0o600, "state.db-wal": 0o600, "state.db-shm": 0o600}
    finally:
        os.umask(old)


def test_an_older_world_readable_store_is_made_private(tmp_path: Path) -> None:
    state = tmp_path / "ufc"
    state.mkdir(mode=0o755)
    _sql(state / "state.db", "PRAGMA journal_mode=WAL")  # as an older ufcctl left it: 0644
    (state / "state.db").chmod(0o644)
    state.chmod(0o755)
    StateStore(state / "state.db").close()
    # the file is made private; the directory, which ufcctl did not create now, keeps its mode
    # (it may be a shared one: tests/unit/engine/test_statedir.py)
    assert _mode(state) == 0o755 and _mode(state / "state.db") == 0o600
