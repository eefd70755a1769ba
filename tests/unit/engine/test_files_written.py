"""Files ufcctl writes (issue 42): created exclusively under a per-process name, never through a planted
link, renamed (or linked) only when whole; directories 0700 whatever the umask; state.db made in one
transaction or not at all; run ids read back from it checked as ids before they name a directory, and
every other column, a run's stored settings and the inventory it names checked before they drive a run."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.unit.nodeside.test_etcd_backup import FakeClient, FakeGateway, snapshot_bytes
from ufcctl.cli.main import cli
from ufcctl.engine import statedir
from ufcctl.errors import InputError
from ufcctl.nodeside.etcd_backup import SnapshotError, check, take
from ufcctl.paths import state_dir
from ufcctl.rollout import store as store_module
from ufcctl.rollout.store import StateStore

AT = 1_795_882_004.0  # core-20261128T160644Z.db


@pytest.fixture
def umask0() -> Iterator[None]:
    old = os.umask(0)
    yield
    os.umask(old)


def _take(directory: Path, data: bytes):
    client = FakeClient(FakeGateway(data))
    return take(client, "https://m1:2379", "m1", str(directory), "core", clock=lambda: AT)


def _planted_link(tmp_path: Path) -> Callable[[], None]:
    """A link at the name the old code opened with O_TRUNC (`.<name>.part`), aimed at a root-owned file."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "dest" / "core").mkdir(parents=True)
    (tmp_path / "dest" / "core" / ".core-20261128T160644Z.db.part").symlink_to(victim)
    snap = _take(tmp_path / "dest" / "core", snapshot_bytes())

    def verify() -> None:
        assert victim.read_text() == "precious\n"
        assert check(snap.path).sha256 == snap.sha256
    return verify


def _same_second(tmp_path: Path) -> Callable[[], None]:
    first = _take(tmp_path / "core", snapshot_bytes(3))
    with pytest.raises(SnapshotError, match="exists already"):
        _take(tmp_path / "core", snapshot_bytes(4))

    def verify() -> None:
        assert check(first.path).sha256 == first.sha256  # the one reported good passes its own checksum
    return verify


def _dirs_under_umask_0(tmp_path: Path) -> Callable[[], None]:
    old = os.umask(0)
    try:
        _take(tmp_path / "backups" / "etcd" / "core", snapshot_bytes())
        statedir.ensure_private_dir(tmp_path / "state" / "backups" / "etcd")
    finally:
        os.umask(old)

    def verify() -> None:
        backups = tmp_path / "backups"
        for path in (backups, backups / "etcd", backups / "etcd" / "core", tmp_path / "state",
                     tmp_path / "state" / "backups"):
            assert path.stat().st_mode & 0o777 == 0o700, path
    return verify


FILES = [("planted-link-at-the-part-name", _planted_link), ("two-backups-in-one-second", _same_second),
         ("parents-0700-under-umask-0", _dirs_under_umask_0)]


@pytest.mark.parametrize("case", [c[1] for c in FILES], ids=[c[0] for c in FILES])
def test_snapshot_files_and_directories(tmp_path: Path, case) -> None:
    case(tmp_path)()


@pytest.mark.parametrize(("make", "message"), [
    (lambda t: _file(t / "file") / "sub", "cannot create directory"),
    (lambda t: (t / "dangling").symlink_to(t / "nowhere") or t / "dangling", "a link to nothing or a file"),
], ids=["under-a-file", "dangling-link"])
def test_a_directory_that_cannot_be_made_is_bad_input(tmp_path: Path, make, message) -> None:
    with pytest.raises(InputError, match=message):
        statedir.ensure_private_dir(make(tmp_path))


def _file(path: Path) -> Path:
    path.write_text("x")
    return path


def _db() -> Path:
    return state_dir() / "state.db"


def _edit(sql: str, *args: object) -> None:
    StateStore().close()
    with sqlite3.connect(_db()) as db:
        db.execute(sql, args)


INSERT = "INSERT INTO runs (run_id, kind, inventory, params, status, created, updated) VALUES "
ROWS = [
    ("run-id-climbing-out", INSERT + "('../../x', 'upgrade-drivers', 'inv', '{}', 'failed', 1, 1)",
     "run id '../../x': not a run id"),
    ("params-not-json", INSERT + "('r1', 'upgrade-drivers', 'inv', '{not json', 'failed', 1, 1)",
     "row of run 'r1': JSONDecodeError"),
]


@pytest.mark.parametrize(("sql", "message"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_hand_edited_rows_are_bad_input_not_an_internal_error(sql: str, message: str) -> None:
    _edit(sql)
    result = CliRunner().invoke(cli, ["runs"])
    assert result.exit_code == 2, result.output
    assert "is corrupt" in result.output and message in result.output
    assert "internal error" not in result.output


def test_a_run_id_is_never_a_path() -> None:
    from ufcctl.domain.inventory.model import Host
    from ufcctl.engine.runner import RunOptions, run_playbook
    from ufcctl.paths import playbook

    with pytest.raises(InputError, match="not a run id"):
        run_playbook(playbook("certs-check.yml"), [Host("m1", {}, frozenset({"all"}))],
                     RunOptions(read_only=True), run_id="../../x")
    assert not (state_dir().parent / "x").exists()


def test_a_first_open_that_fails_half_way_leaves_no_state_db(monkeypatch) -> None:
    """A full disk during the first command: the tables made before it are not left behind."""
    monkeypatch.setattr(store_module, "_SCHEMA", store_module._SCHEMA + "\nCREATE TABLE broken (;")
    with pytest.raises(InputError, match="cannot use state database"):
        StateStore()
    assert not _db().exists()
    monkeypatch.undo()
    StateStore().close()  # the next command starts afresh
    assert CliRunner().invoke(cli, ["runs"]).exit_code == 0


def _run_row(params: str = '{"inventory_dir": "/nowhere", "batch": 1}', status: str = "failed",
             created: str = "1") -> str:
    return INSERT + f"('r1', 'upgrade-drivers', 'inv', '{params}', '{status}', {created}, 1)"


# (id, SQL, command, what the Error line says): each was an internal error (exit 1) before
EDITED = [
    ("run-status-unknown", _run_row(status="weird"), ["runs"], "status 'weird' is none of"),
    ("run-created-text", _run_row(created="'yesterday'"), ["runs"], "created holds str, not a number"),
    ("params-a-list", _run_row(params="[1, 2]"), ["resume", "r1"], "params holds a JSON list"),
    ("params-without-inventory", _run_row(params="{}"), ["resume", "r1"], "inventory_dir is missing"),
    ("setting-of-another-type", _run_row(params='{"inventory_dir": "/x", "batch": "x"}'), ["resume", "r1"],
     "setting batch holds str 'x'"),
    ("setting-a-bool-for-an-int", _run_row(params='{"inventory_dir": "/x", "batch": true}'),
     ["resume", "r1"], "setting batch holds bool"),
    ("option-no-scalar", _run_row(params='{"inventory_dir": "/x", "batch": 1, "version": {"a": 1}}'),
     ["resume", "r1"], "option version holds dict"),
    ("node-batch-text", _run_row() + "; INSERT INTO nodes (run_id, host, batch, position, state) "
     "VALUES ('r1', 'h1', 'x', 0, 'pending')", ["plan-nodes"], "batch holds str, not int"),
    ("node-state-unknown", _run_row() + "; INSERT INTO nodes (run_id, host, batch, position, state) "
     "VALUES ('r1', 'h1', 0, 0, 'zzz')", ["plan-nodes"], "state 'zzz' is none of"),
]


@pytest.mark.parametrize(("sql", "command", "message"), [e[1:] for e in EDITED], ids=[e[0] for e in EDITED])
def test_every_hand_edited_column_is_a_corrupt_row_exit_2(sql: str, command: list[str], message: str) -> None:
    StateStore().close()
    with sqlite3.connect(_db()) as db:
        db.executescript(sql)
    if command == ["plan-nodes"]:  # the nodes of a run, as resume and the report read them
        with pytest.raises(InputError, match="is corrupt") as caught:
            StateStore().nodes("r1")
        assert message in caught.value.message
        return
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == 2, result.output
    assert "is corrupt" in result.output and message in result.output, result.output


def test_a_runs_inventory_that_is_gone_is_named(tmp_path: Path) -> None:
    _edit(INSERT + "(?, 'upgrade-drivers', 'inv', ?, 'failed', 1, 1)", "r1",
          '{"inventory_dir": "%s", "batch": 1}' % (tmp_path / "gone"))
    result = CliRunner().invoke(cli, ["resume", "r1"])
    assert result.exit_code == 2, result.output
    assert "the run's inventory" in result.output and "is no directory" in result.output
