"""The sqlite state store: runs, guarded node moves, WAL, durability across kill -9, concurrency."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ufcctl.rollout.store import StateError, StateFileError, StateStore


@pytest.fixture()
def store(tmp_path: Path) -> StateStore:
    s = StateStore(tmp_path / "state.db")
    yield s
    s.close()


def _make(store: StateStore, run_id: str = "r1", n: int = 4, kind: str = "upgrade-drivers") -> None:
    store.create_run(run_id, kind, "inv", {"batch": 2}, [(f"h{i}", i // 2, i) for i in range(n)])


def test_new_run_has_pending_nodes_in_plan_order(store: StateStore) -> None:
    _make(store)
    run = store.run("r1")
    assert run is not None and run.status == "running" and run.params == {"batch": 2}
    assert run.counts == {"pending": 4}
    assert run.pid == os.getpid() and run.controller_alive()
    assert [(n.host, n.batch) for n in store.nodes("r1")] == [("h0", 0), ("h1", 0), ("h2", 1), ("h3", 1)]


def test_journal_is_wal(store: StateStore, tmp_path: Path) -> None:
    mode = sqlite3.connect(tmp_path / "state.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_node_lifecycle_and_timings(store: StateStore) -> None:
    _make(store)
    store.mark_running("r1", ["h0", "h1"], "r1-run001")
    store.mark_finished("r1", "h0", "done", changed=True)
    store.mark_finished("r1", "h1", "failed", reason="chip 3 unhealthy")
    nodes = {n.host: n for n in store.nodes("r1")}
    assert nodes["h0"].state == "done" and nodes["h0"].changed is True and nodes["h0"].seconds is not None
    assert nodes["h1"].reason == "chip 3 unhealthy" and nodes["h1"].attempts == 1
    assert nodes["h0"].ansible_run == "r1-run001"
    assert store.run("r1").counts == {"done": 1, "failed": 1, "pending": 2}


@pytest.mark.parametrize(
    ("setup", "host", "new"),
    [
        pytest.param([], "h0", "done", id="pending-cannot-be-done"),
        pytest.param([("run", "h0"), ("done", "h0")], "h0", "running", id="done-is-final"),
        pytest.param([], "nope", "running", id="unknown-host"),
    ],
)
def test_forbidden_moves_are_refused(store: StateStore, setup: list, host: str, new: str) -> None:
    _make(store)
    for action, h in setup:
        if action == "run":
            store.mark_running("r1", [h], "x")
        else:
            store.mark_finished("r1", h, action)
    with pytest.raises(StateError, match=host):
        if new == "running":
            store.mark_running("r1", [host], "x")
        else:
            store.mark_finished("r1", host, new)


def test_a_refused_move_changes_nothing(store: StateStore) -> None:
    _make(store)
    store.mark_running("r1", ["h1"], "x")
    store.mark_finished("r1", "h1", "done")
    with pytest.raises(StateError):
        store.mark_running("r1", ["h0", "h1"], "y")  # h0 could move, h1 cannot: the whole move rolls back
    assert {n.host: n.state for n in store.nodes("r1")}["h0"] == "pending"


def test_reset_for_resume_and_retry(store: StateStore) -> None:
    _make(store)
    store.mark_running("r1", ["h0", "h1", "h2"], "x")
    store.mark_finished("r1", "h0", "done")
    store.mark_finished("r1", "h1", "failed", reason="boom")
    assert store.reset("r1", ["running"]) == ["h2"]
    assert store.reset("r1", ["failed"]) == ["h1"]
    states = {n.host: n.state for n in store.nodes("r1")}
    assert states == {"h0": "done", "h1": "pending", "h2": "pending", "h3": "pending"}


def test_runs_newest_first_and_steps(store: StateStore) -> None:
    _make(store, "r1")
    _make(store, "r2")
    store.set_step("r2", "drain", "skipped: no kubeconfig")
    store.finish_run("r2", "done", "all good")
    runs = store.runs()
    assert [r.run_id for r in runs] == ["r2", "r1"]
    assert runs[0].steps == {"drain": "skipped: no kubeconfig"} and runs[0].finished is not None
    assert runs[0].pid is None and not runs[0].controller_alive()
    with pytest.raises(StateError, match="no run"):
        store.finish_run("nope", "done", None)


def test_median_node_seconds_counts_only_changed_done_nodes(store: StateStore) -> None:
    _make(store, "r1")
    assert store.median_node_seconds("r1") is None
    store.mark_running("r1", ["h0", "h1", "h2", "h3"], "x")
    for host in ("h0", "h1", "h2"):
        store.mark_finished("r1", host, "done", changed=True)
    store.mark_finished("r1", "h3", "done", changed=False)  # already at target: not a measurement
    with store._tx() as db:  # fix timings so the median is known: 10, 20, 90 s (and 1 s unchanged)
        for host, secs in (("h0", 10), ("h1", 20), ("h2", 90), ("h3", 1)):
            db.execute("UPDATE nodes SET started = 0, finished = ? WHERE host = ?", (secs, host))
    assert store.median_node_seconds("r1") == 20


def test_node_durations_keep_each_nodes_newest_record_and_failures_as_floors(store: StateStore) -> None:
    def run(run_id: str, outcomes: dict[str, tuple[str, bool, float]], created: float) -> None:
        store.create_run(run_id, "upgrade-drivers", "inv", {}, [(h, 0, i) for i, h in enumerate(outcomes)])
        store.mark_running(run_id, list(outcomes), "x")
        for host, (state, changed, _) in outcomes.items():
            store.mark_finished(run_id, host, state, reason="r" if state == "failed" else None,
                                changed=changed)
        with store._tx() as db:
            db.execute("UPDATE runs SET created = ? WHERE run_id = ?", (created, run_id))
            for host, (_, _, secs) in outcomes.items():
                db.execute("UPDATE nodes SET started = 0, finished = ? WHERE run_id = ? AND host = ?",
                           (secs, run_id, host))

    run("old", {"a": ("done", True, 5), "b": ("done", True, 6), "c": ("failed", False, 300)}, 1.0)
    run("new", {"a": ("failed", False, 120), "b": ("done", False, 1), "c": ("done", True, 7)}, 2.0)
    measured, floors = store.node_durations("upgrade-drivers")
    # a: its newest record is the hang (a floor), not the older install; b: "already at target"
    # measures nothing, so the older install counts; c: installed after it failed
    assert measured == {"b": 6, "c": 7} and floors == {"a": 120}


def test_concurrent_writers_lose_nothing(store: StateStore) -> None:
    hosts = [f"h{i}" for i in range(200)]
    store.create_run("r1", "k", "inv", {}, [(h, 0, i) for i, h in enumerate(hosts)])
    store.mark_running("r1", hosts, "x")

    def finish(part: list[str]) -> None:
        for host in part:
            store.mark_finished("r1", host, "done")

    threads = [threading.Thread(target=finish, args=(hosts[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.run("r1").counts == {"done": 200}


_WRITER = """
import os, signal, sys
from pathlib import Path
from ufcctl.rollout.store import StateStore
s = StateStore(Path(sys.argv[1]))
hosts = [f"h{i}" for i in range(50)]
s.create_run("r1", "k", "inv", {}, [(h, 0, i) for i, h in enumerate(hosts)])
s.mark_running("r1", hosts, "x")
for h in hosts[:30]:
    s.mark_finished("r1", h, "done")
print("committed", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_committed_states_survive_kill_9(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    proc = subprocess.run(
        [sys.executable, "-c", _WRITER, str(db)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == -signal.SIGKILL and "committed" in proc.stdout
    with StateStore(db) as store:
        run = store.run("r1")
        assert run is not None and run.counts == {"done": 30, "running": 20}
        assert not run.controller_alive()  # its pid is gone


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    StateStore(tmp_path / "s.db").close()
    conn = sqlite3.connect(tmp_path / "s.db")
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    with pytest.raises(StateFileError, match="schema 99, newer than this ufcctl"):
        StateStore(tmp_path / "s.db")
