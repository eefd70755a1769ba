"""Node locks: a live holder refuses overlapping runs; a killed one leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ufcctl.engine.locks import NodesBusy, hold_nodes, live_holders

ROOT = Path(__file__).resolve().parents[3]

# Holds a lock until killed (or for 120 s), after printing "held".
_HOLDER = """
import sys, time
from pathlib import Path
from ufcctl.engine.locks import hold_nodes
lock = hold_nodes(sys.argv[2], sys.argv[3].split(","), directory=Path(sys.argv[1]),
                  command="ufcctl upgrade-drivers -i lab --batch 4")
print("held", flush=True)
time.sleep(120)
"""

# Says ready, waits for a start file, then tries to lock the same node; prints ok (and holds) or busy.
_RACER = """
import sys, time
from pathlib import Path
from ufcctl.engine.locks import NodesBusy, hold_nodes
print("ready", flush=True)
start = Path(sys.argv[1]) / "go"
while not start.exists():
    time.sleep(0.001)
try:
    lock = hold_nodes(sys.argv[2], ["n1"], directory=Path(sys.argv[1]) / "locks")
except NodesBusy:
    print("busy", flush=True)
else:
    print("ok", flush=True)
    time.sleep(120)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _holder(directory: Path, run_id: str, nodes: list[str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(directory), run_id, ",".join(nodes)],
                            stdout=subprocess.PIPE, text=True, env=_env())
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def test_overlap_is_refused_naming_the_holder(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    holder = _holder(locks, "upgrade-drivers-1", ["a", "b", "c"])
    try:
        with pytest.raises(NodesBusy) as caught:
            hold_nodes("deploy-2", ["c", "d", "b"], directory=locks)
        err = caught.value
        assert err.exit_code == 2
        assert "2 of the 3 node(s) of this run are held by run upgrade-drivers-1" in err.message
        assert f"pid {holder.pid}" in err.message and "ufcctl upgrade-drivers -i lab --batch 4" in err.message
        assert err.message.endswith(": b, c") and f"kill {holder.pid}" in (err.hint or "")
        assert [h.run_id for h in live_holders(locks)] == ["upgrade-drivers-1"]
    finally:
        _kill(holder)


def test_kill_9_frees_the_nodes_and_removes_the_stale_file(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    holder = _holder(locks, "upgrade-drivers-1", ["a", "b"])
    _kill(holder)
    assert (locks / "upgrade-drivers-1.lock").exists()  # the file stays; nobody holds it
    with hold_nodes("upgrade-drivers-2", ["a", "b"], directory=locks):
        assert not (locks / "upgrade-drivers-1.lock").exists()
        assert [h.run_id for h in live_holders(locks)] == ["upgrade-drivers-2"]
    assert live_holders(locks) == [] and not (locks / "upgrade-drivers-2.lock").exists()


def test_disjoint_runs_are_both_allowed(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    holder = _holder(locks, "r1", ["a", "b"])
    try:
        with hold_nodes("r2", ["c", "d"], directory=locks):
            assert sorted(h.run_id for h in live_holders(locks)) == ["r1", "r2"]
    finally:
        _kill(holder)


def test_the_same_run_cannot_be_run_twice(tmp_path: Path) -> None:
    """resume of a run that is still running: refused even when no node is left to share."""
    locks = tmp_path / "locks"
    holder = _holder(locks, "r1", ["a"])
    try:
        with pytest.raises(NodesBusy, match=r"run r1 is already being run \(pid"):
            hold_nodes("r1", [], directory=locks)
    finally:
        _kill(holder)


def test_two_processes_on_one_node_at_the_same_instant_one_wins(tmp_path: Path) -> None:
    racers = [subprocess.Popen([sys.executable, "-c", _RACER, str(tmp_path), f"r{i}"], stdout=subprocess.PIPE,
                               text=True, env=_env()) for i in range(6)]
    try:
        assert all(p.stdout is not None and p.stdout.readline().strip() == "ready" for p in racers)
        (tmp_path / "go").touch()
        outcomes = sorted(p.stdout.readline().strip() for p in racers if p.stdout is not None)
        assert outcomes == ["busy"] * 5 + ["ok"]
    finally:
        for p in racers:
            _kill(p)


def test_a_held_but_unreadable_lock_holds_every_node(tmp_path: Path) -> None:
    import fcntl

    locks = tmp_path / "locks"
    locks.mkdir()
    fd = os.open(locks / "mystery.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"{not json")
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(NodesBusy, match="held by run mystery"):
            hold_nodes("r1", ["x"], directory=locks)
    finally:
        os.close(fd)


def test_lock_file_records_the_holder_privately(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    with hold_nodes("r1", ["b", "a"], directory=locks, command="ufcctl deploy -i lab") as lock:
        data = json.loads(lock.path.read_text())
        assert data["run_id"] == "r1" and data["pid"] == os.getpid() and data["nodes"] == ["a", "b"]
        assert data["command"] == "ufcctl deploy -i lab"
        assert lock.path.stat().st_mode & 0o777 == 0o600 and locks.stat().st_mode & 0o777 == 0o700
