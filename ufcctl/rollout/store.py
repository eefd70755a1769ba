"""The rollout state store: runs and per-node rows in sqlite (WAL, one transaction per change).

Every state change is committed before ufcctl acts on it, so `kill -9` at any moment leaves a
database that says exactly which nodes finished. Node moves are guarded in SQL (`WHERE state IN
(allowed previous states)`), so the state machine of domain/rollout/states.py holds even when two
threads report the same node. One connection, serialised by a lock: sqlite writes are serial
anyway, and at one row per node event (16,000 nodes) the lock is never the bottleneck.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ufcctl.domain.rollout.states import (
    NODE_STATES,
    PENDING,
    RUNNING,
    previous_states,
    run_id_problem,
)
from ufcctl.engine import statedir
from ufcctl.errors import cut, shown
from ufcctl.paths import state_dir
from ufcctl.rollout.storedurations import median_node_seconds, node_durations
from ufcctl.rollout.storefile import (
    StateFileError,
    corrupt,
    create_private,
    create_schema,
    file_error,
    identify,
    make_private,
)
from ufcctl.rollout.storerecords import (
    NodeChange,
    NodeRecord,
    RunRecord,
    StateError,
    _node_record,
    _run_record,
)

__all__ = ["NodeChange", "NodeRecord", "RunRecord", "StateError", "StateFileError", "StateStore"]

# 2: runs.inventory_fingerprint (what the inventory held when the run began; resume compares it).
# A version-1 file is migrated in place on open (one ALTER TABLE); ufcctl before 2 refuses a file
# of version 2 as newer, untouched (storefile.identify).
SCHEMA_VERSION = 2
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    inventory TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL,
    message TEXT,
    steps TEXT NOT NULL DEFAULT '{}',
    created REAL NOT NULL,
    updated REAL NOT NULL,
    finished REAL,
    pid INTEGER,
    hostname TEXT,
    inventory_fingerprint TEXT
);
CREATE TABLE IF NOT EXISTS nodes (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    host TEXT NOT NULL,
    batch INTEGER NOT NULL,
    position INTEGER NOT NULL,
    state TEXT NOT NULL,
    reason TEXT,
    changed INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    started REAL,
    finished REAL,
    ansible_run TEXT,
    PRIMARY KEY (run_id, host)
);
CREATE INDEX IF NOT EXISTS nodes_by_state ON nodes (run_id, state);
"""
# From each older schema version to the next: statements run in one transaction with the new version.
_MIGRATIONS: dict[int, str] = {
    1: "ALTER TABLE runs ADD COLUMN inventory_fingerprint TEXT",
}


def default_path() -> Path:
    return state_dir() / "state.db"


class StateStore:
    def __init__(self, path: Path | None = None):
        self.path = path or default_path()
        statedir.prepare(self.path.parent)
        # Identified read-only first: a foreign, corrupt or newer file is refused untouched.
        version = identify(self.path, SCHEMA_VERSION)
        self._lock = threading.Lock()
        self.writes = 0  # committed write transactions, for the engine's benchmark
        self._created = False
        if version is None:
            self._created = create_private(self.path)
        try:
            # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE in _tx)
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            # FULL: a committed node state survives power loss too, not only a killed process
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            if version is None:
                create_schema(self._db, self.path, self._created, _SCHEMA, SCHEMA_VERSION)
            elif version < SCHEMA_VERSION:
                self._migrate()
        except sqlite3.DatabaseError as err:
            raise file_error(self.path, err) from err
        make_private(self.path)

    def _migrate(self) -> None:
        """Bring an older file up to SCHEMA_VERSION, one step per transaction; a concurrent ufcctl that
        migrated first is noticed under the write lock (the version is read again inside it)."""
        while True:
            with self._tx() as db:
                row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
                version = int(row[0])
                if version >= SCHEMA_VERSION:
                    return
                db.execute(_MIGRATIONS[version])
                db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(version + 1),))

    @property
    def lock_dir(self) -> Path:
        """Where runs on this store lock their nodes (engine/locks.py): beside the database."""
        return self.path.parent / "locks"

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._conn() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            self.writes += 1

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        """The connection, serialised; a page found damaged on the way becomes a StateFileError."""
        with self._lock:
            try:
                yield self._db
            except sqlite3.DatabaseError as err:
                if type(err) is not sqlite3.DatabaseError:  # locked, constraint, ...: not damage
                    raise
                raise file_error(self.path, err) from err

    def verify(self) -> None:
        """sqlite's quick_check, for commands about to write many rows (a rollout): a damaged page
        is refused before any node is touched (about 0.1 s for 20 runs of 16,000 nodes)."""
        with self._lock:
            try:
                rows = self._db.execute("PRAGMA quick_check").fetchall()
            except sqlite3.DatabaseError as err:
                raise file_error(self.path, err) from err
        problems = [str(r[0]) for r in rows if r[0] != "ok"]
        if problems:
            raise corrupt(self.path, problems[0][:200])

    # -- runs -------------------------------------------------------------------------------

    def create_run(
        self, run_id: str, kind: str, inventory: str, params: dict[str, Any],
        nodes: Iterable[tuple[str, int, int]], *, status: str = RUNNING,
        inventory_fingerprint: str | None = None,
    ) -> None:
        """A new run with its nodes (host, batch, position), all pending, owned by this process."""
        now = time.time()
        with self._tx() as db:
            db.execute(
                "INSERT INTO runs (run_id, kind, inventory, params, status, created, updated, pid, hostname,"
                " inventory_fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, kind, inventory, json.dumps(params), status, now, now, os.getpid(),
                 socket.gethostname(), inventory_fingerprint),
            )
            db.executemany(
                "INSERT INTO nodes (run_id, host, batch, position, state) VALUES (?, ?, ?, ?, ?)",
                ((run_id, host, batch, position, PENDING) for host, batch, position in nodes),
            )

    def claim_run(self, run_id: str, *, inventory_fingerprint: str | None = None) -> None:
        """This process now owns the run (resume): status running, pid and hostname updated, and the
        inventory it resumes with recorded when given (an accepted change is not asked about again)."""
        values: dict[str, Any] = {}
        if inventory_fingerprint:
            values["inventory_fingerprint"] = inventory_fingerprint
        self._update_run(run_id, status=RUNNING, pid=os.getpid(), hostname=socket.gethostname(),
                         finished=None, message=None, **values)

    def finish_run(self, run_id: str, status: str, message: str | None) -> None:
        self._update_run(run_id, status=status, message=message, finished=time.time(), pid=None)

    def set_step(self, run_id: str, step: str, outcome: str) -> None:
        run = self.run(run_id)
        if run is None:
            raise StateError(f"no run {run_id}")
        self._update_run(run_id, steps=json.dumps({**run.steps, step: outcome}))

    def _update_run(self, run_id: str, **values: Any) -> None:
        values["updated"] = time.time()
        columns = ", ".join(f"{k} = ?" for k in values)
        with self._tx() as db:
            cur = db.execute(f"UPDATE runs SET {columns} WHERE run_id = ?", (*values.values(), run_id))
            if cur.rowcount != 1:
                raise StateError(f"no run {run_id} in {self.path}")

    def run(self, run_id: str) -> RunRecord | None:
        with self._conn() as db:
            row = db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                return None
            counts = self._counts(run_id)
        return self._read_back(_run_record, row, counts)

    def runs(self, kind: str | None = None, limit: int = 50) -> list[RunRecord]:
        """Newest first."""
        query = "SELECT * FROM runs" + (" WHERE kind = ?" if kind else "") + " ORDER BY created DESC LIMIT ?"
        args: tuple[Any, ...] = (kind, limit) if kind else (limit,)
        with self._conn() as db:
            rows = db.execute(query, args).fetchall()
            return [self._read_back(_run_record, row, self._counts(row["run_id"])) for row in rows]

    def _read_back(self, make: Any, row: sqlite3.Row, *args: Any) -> Any:
        """A record from a row that may have been edited by hand: a run id that is no id (it names
        directories) or a field of the wrong type is a StateFileError naming the row, not a traceback."""
        ids = [row[k] for k in ("run_id", "ansible_run") if k in row.keys() and row[k] is not None]
        for value in ids:
            problem = run_id_problem(value)
            if problem:
                raise corrupt(self.path, f"run id {shown(value)}: {problem}")
        try:
            return make(row, *args)
        except (ValueError, TypeError, KeyError) as err:
            raise corrupt(self.path, f"row of run {shown(row['run_id'])}: {type(err).__name__}: "
                                     f"{cut(str(err))}") from err

    def _counts(self, run_id: str) -> dict[str, int]:
        rows = self._db.execute(
            "SELECT state, COUNT(*) AS n FROM nodes WHERE run_id = ? GROUP BY state", (run_id,)
        ).fetchall()
        return {row["state"]: row["n"] for row in rows}

    # -- nodes ------------------------------------------------------------------------------

    def nodes(self, run_id: str, states: Sequence[str] = ()) -> list[NodeRecord]:
        """The run's nodes in plan order (batch, position), optionally only in these states."""
        query = "SELECT * FROM nodes WHERE run_id = ?"
        args: list[Any] = [run_id]
        if states:
            query += f" AND state IN ({', '.join('?' * len(states))})"
            args += list(states)
        with self._conn() as db:
            rows = db.execute(query + " ORDER BY batch, position", args).fetchall()
        return [self._read_back(_node_record, row) for row in rows]

    def mark_running(self, run_id: str, hosts: Sequence[str], ansible_run: str) -> None:
        now = time.time()
        self._move(run_id, hosts, RUNNING, "started = ?, finished = NULL, reason = NULL, changed = NULL,"
                   " attempts = attempts + 1, ansible_run = ?", (now, ansible_run))

    def mark_finished(self, run_id: str, host: str, state: str, reason: str | None = None,
                      changed: bool | None = None) -> None:
        self._move(run_id, [host], state, "finished = ?, reason = ?, changed = ?",
                   (time.time(), reason, None if changed is None else int(changed)))

    def mark_skipped(self, run_id: str, hosts: Sequence[str], reason: str) -> None:
        self._move(run_id, hosts, "skipped", "finished = ?, reason = ?", (time.time(), reason))

    def reset(self, run_id: str, states: Sequence[str]) -> list[str]:
        """Nodes in `states` back to pending (resume: running; --retry-failed: failed, skipped)."""
        hosts = [n.host for n in self.nodes(run_id, states)]
        if hosts:
            self._move(run_id, hosts, PENDING, "reason = NULL, changed = NULL", ())
        return hosts

    def reset_hosts(self, run_id: str, hosts: Sequence[str]) -> None:
        """These nodes back to pending (their run was cancelled before they ended)."""
        self._move(run_id, hosts, PENDING, "reason = NULL, changed = NULL", ())

    def _move(self, run_id: str, hosts: Sequence[str], new: str, sets: str, args: tuple[Any, ...]) -> None:
        with self._tx() as db:
            for host in hosts:
                problem = _move_one(db, run_id, host, new, sets, args)
                if problem:
                    raise StateError(problem)
            db.execute("UPDATE runs SET updated = ? WHERE run_id = ?", (time.time(), run_id))

    def apply(self, run_id: str, changes: Sequence[NodeChange]) -> list[str]:
        """Several node changes in one transaction (the engine's group commit), in order.

        One commit, so one fsync, however many changes: under load the engine commits what queued
        up meanwhile together instead of paying a sync per node. A change the state machine refuses
        is skipped and described in the returned list; the others commit.
        """
        refused = []
        with self._tx() as db:
            for change in changes:
                sets, args = _change_sets(change)
                problem = _move_one(db, run_id, change.host, change.state, sets, args)
                if problem:
                    refused.append(problem)
            db.execute("UPDATE runs SET updated = ? WHERE run_id = ?", (time.time(), run_id))
        return refused

    def node_durations(self, kind: str, *, runs: int = 5) -> tuple[dict[str, float], dict[str, float]]:
        """Each node's newest measured time and failure floor in the newest real runs of `kind`
        (storedurations.py)."""
        with self._conn() as db:
            return node_durations(db, kind, runs)

    def median_node_seconds(self, run_id: str) -> float | None:
        """Median duration of the run's nodes that were done with a change (a real install), or None."""
        with self._conn() as db:
            return median_node_seconds(db, run_id)


def _move_one(db: sqlite3.Connection, run_id: str, host: str, new: str, sets: str,
              args: tuple[Any, ...]) -> str | None:
    """Move one node to `new` if the state machine allows it from its state; else say why not."""
    if new not in NODE_STATES:
        return f"unknown node state {new!r}"
    allowed = sorted(previous_states(new))
    marks = ", ".join("?" * len(allowed))
    sql = f"UPDATE nodes SET state = ?, {sets} WHERE run_id = ? AND host = ? AND state IN ({marks})"
    if db.execute(sql, (new, *args, run_id, host, *allowed)).rowcount == 1:
        return None
    row = db.execute("SELECT state FROM nodes WHERE run_id = ? AND host = ?", (run_id, host)).fetchone()
    where = f"is {row['state']}" if row else "is not in the run"
    return f"run {run_id}: node {host} {where}; cannot become {new}"


def _change_sets(change: NodeChange) -> tuple[str, tuple[Any, ...]]:
    if change.state == RUNNING:
        return ("started = ?, finished = NULL, reason = NULL, changed = NULL, attempts = attempts + 1, "
                "ansible_run = ?", (change.at, change.ansible_run))
    if change.state == PENDING:
        return "reason = NULL, changed = NULL", ()
    changed = None if change.changed is None else int(change.changed)
    return "finished = ?, reason = ?, changed = ?", (change.at, change.reason, changed)
