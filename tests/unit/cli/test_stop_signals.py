"""SIGTERM and SIGINT to a running ufcctl: the whole Ansible process tree is stopped and waited for,
then the nodes and the run are recorded, then the node lock is released, then ufcctl exits 128+signum.

ufcctl runs as a real process through the real path (CLI, rollout engine or single run,
engine/runner.py, ansible-runner on a pty), with `ansible-playbook` replaced by
tests/helpers/tree_playbook.py: ansible-core 2.19's process tree (workers in their own sessions,
ssh-like grandchildren in theirs), which a SIGKILL to the playbook's process group does not end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ufcctl.engine.locks import live_holders
from ufcctl.rollout.store import StateStore

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # tests.helpers is imported from the repository root
    sys.path.insert(0, str(ROOT))

from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory  # noqa: E402

HANG_GUARD = 120.0  # a guard against a hang, never a timing assertion

# ufcctl with the Ansible CLI replaced by the stand-in (argv[1]) and the stop's grace period set (argv[2]),
# SIGINT and SIGTERM at Python's defaults as under a terminal: a test run that a non-interactive shell
# started in the background inherits SIGINT ignored, Python leaves it ignored, and ufcctl rightly
# installs no handler over an ignored signal (engine/stops.py): a SIGINT from the test would be lost
# and the run would hang until the hang guard killed it (rc -9)
_UFCCTL = """
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
import sys
import ufcctl.engine.proctree as proctree
import ufcctl.engine.runner as runner
FAKE = sys.argv[1]
runner.ansible_binary = lambda name="ansible-playbook": FAKE
proctree.GRACE_SECONDS = float(sys.argv[2])
from ufcctl.cli.main import main
sys.argv = ["ufcctl", *sys.argv[3:]]
main()
"""


@dataclass
class Lab:
    inventory: Path
    state: Path
    out: Path
    playbook: Path


@pytest.fixture()
def lab(tmp_path: Path) -> Lab:
    folder = tmp_path / "bin"
    folder.mkdir()
    playbook = folder / "ansible-playbook"
    playbook.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                        "from tests.helpers.tree_playbook import main\nmain()\n")
    playbook.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    shape = ClusterShape(npu_nodes=16, nodes_per_tor=4)
    inventory = write_cluster_inventory(tmp_path / "inv", shape, "explicit")
    return Lab(inventory, tmp_path / "state", out, playbook)


def _start(lab: Lab, args: list[str], *, grace: float = 10.0, stubborn: bool = False,
           through: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    """ufcctl, started by `through` (a command that execs its arguments) when given."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "UFC_STATE_DIR": str(lab.state), "TREE_OUT": str(lab.out),
           "KUBECONFIG": str(lab.out / "no-kubeconfig"), "TREE_STUBBORN": "1" if stubborn else "0"}
    return subprocess.Popen([*through, sys.executable, "-c", _UFCCTL, str(lab.playbook), str(grace), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=lab.out)


def _catches(pid: int, signum: int) -> bool:
    """The process has a handler for `signum` (SigCgt): a signal sent now is neither ignored nor fatal."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    raise AssertionError(f"no SigCgt in /proc/{pid}/status")


def _wait_for(what: str, ready, proc: subprocess.Popen[str]) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + HANG_GUARD
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"{what} never happened: rc {proc.returncode}\n{out}\n{err}")
        time.sleep(0.05)


def _tree(lab: Lab) -> list[int]:
    return [int(line.split()[1]) for line in (lab.out / "pids").read_text().splitlines()]


def _alive(pid: int) -> bool:
    """Running, not a zombie (an orphan's zombie waits for whoever reaps orphans here)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _admitted(lab: Lab) -> list[str]:
    return sorted(p.name.removeprefix("admitted-") for p in lab.out.glob("admitted-*"))


def _wait_exit_watching_lock(lab: Lab, proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Until ufcctl exits: whenever no lock is held, no process of the Ansible tree may be alive."""
    deadline = time.monotonic() + HANG_GUARD
    while proc.poll() is None:
        if not live_holders(lab.state / "locks"):
            alive = [pid for pid in _tree(lab) if _alive(pid)]
            assert not alive, f"the node lock was free while {alive} still ran"
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"ufcctl did not exit: {proc.communicate()}")
        time.sleep(0.02)
    return proc.communicate()


def _cleanup(lab: Lab) -> None:
    """Whatever the code under test left running (it must leave nothing) is killed here."""
    if (lab.out / "pids").exists():
        for pid in _tree(lab):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _only_run(lab: Lab) -> tuple[str, str, dict[str, str]]:
    with StateStore(lab.state / "state.db") as store:
        (run,) = store.runs()
        return run.run_id, run.status, {n.host: n.state for n in store.nodes(run.run_id)}


ROLLOUT = ["upgrade-drivers", "--batch", "8"]


@pytest.mark.parametrize(("signums", "stubborn"), [
    pytest.param((signal.SIGTERM,), False, id="sigterm"),
    pytest.param((signal.SIGINT,), False, id="sigint"),
    # SIGTERM, ignored by the grandchildren, grace far beyond the hang guard: the second signal
    # (SIGINT) must kill them at once, and the stop is still recorded
    pytest.param((signal.SIGTERM, signal.SIGINT), True, id="second-signal-kills-at-once"),
])
def test_a_signal_stops_the_rollouts_whole_tree_then_records_then_unlocks(
        lab: Lab, signums: tuple[int, ...], stubborn: bool) -> None:
    proc = _start(lab, [*ROLLOUT, "-i", str(lab.inventory)], grace=3600 if stubborn else 10,
                  stubborn=stubborn)
    try:
        _wait_for("8 nodes admitted", lambda: len(_admitted(lab)) == 8, proc)
        run_id, status, nodes = _only_run(lab)
        assert status == "running" and sorted(h for h, s in nodes.items() if s == "running") == _admitted(lab)
        assert _catches(proc.pid, signums[0])
        proc.send_signal(signums[0])
        if len(signums) > 1:  # the first stop has reached the grandchildren, which ignore it
            _wait_for("SIGTERM at every grandchild", lambda: len(list(lab.out.glob("term-*"))) == 8, proc)
            assert any(_alive(pid) for pid in _tree(lab))
            assert _catches(proc.pid, signums[1])
            proc.send_signal(signums[1])
        out, err = _wait_exit_watching_lock(lab, proc)
        assert proc.returncode == 128 + signums[0], err
        name = signal.Signals(signums[0]).name
        assert f"Error: stopped by {name}: rollout {run_id} stopped" in err
        assert f"`ufcctl resume {run_id}` continues" in err
        assert [pid for pid in _tree(lab) if _alive(pid)] == []
        run_id, status, nodes = _only_run(lab)
        assert status == "interrupted"
        assert set(nodes.values()) == {"pending"}  # the 8 in flight back to pending, the rest never started
        assert not list((lab.state / "locks").glob("*.lock"))
    finally:
        _cleanup(lab)
        if proc.poll() is None:
            proc.kill()


def test_sigterm_stops_a_single_run_deploys_cluster_phase(lab: Lab) -> None:
    proc = _start(lab, ["deploy", "-i", str(lab.inventory), "--limit", "cp1"])
    try:
        _wait_for("cp1 in flight", lambda: _admitted(lab) == ["cp1"], proc)
        assert live_holders(lab.state / "locks")
        proc.send_signal(signal.SIGTERM)
        out, err = _wait_exit_watching_lock(lab, proc)
        assert proc.returncode == 143, err
        assert "Error: stopped by SIGTERM: ansible run deploy-" in err and "run the same command again" in err
        assert [pid for pid in _tree(lab) if _alive(pid)] == []
        assert not list((lab.state / "locks").glob("*.lock"))
    finally:
        _cleanup(lab)
        if proc.poll() is None:
            proc.kill()


def test_sigint_stops_ufcctl_started_with_sigint_ignored(lab: Lab) -> None:
    """The test runner itself in a job a non-interactive shell put in the background (SIGINT ignored,
    inherited by every child): ufcctl under test still takes SIGINT, as from a terminal."""
    proc = _start(lab, ["deploy", "-i", str(lab.inventory), "--limit", "cp1"],
                  through=("sh", "-c", 'trap "" INT; exec "$@"', "sh"))
    try:
        _wait_for("cp1 in flight", lambda: _admitted(lab) == ["cp1"], proc)
        assert _catches(proc.pid, signal.SIGINT), "ufcctl under test ignores SIGINT: a SIGINT would be lost"
        proc.send_signal(signal.SIGINT)
        out, err = _wait_exit_watching_lock(lab, proc)
        assert proc.returncode == 130, err
        assert [pid for pid in _tree(lab) if _alive(pid)] == []
    finally:
        _cleanup(lab)
        if proc.poll() is None:
            proc.kill()


def test_the_stand_in_admits_a_node_once_its_grandchild_takes_sigterm(tmp_path: Path) -> None:
    """A SIGTERM sent as soon as a node is admitted is noted by a stubborn grandchild, however slowly
    it started (a loaded machine, here made slow on purpose), never the default action that ends it."""
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"n1": {}}}}))
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "UFC_ROLLOUT_GATE"}
    env.update(PYTHONPATH=str(ROOT), TREE_OUT=str(out), TREE_STUBBORN="1", TREE_SLOW_START="1")
    proc = subprocess.Popen([sys.executable, "-c", "from tests.helpers.tree_playbook import main; main()",
                             "-i", str(inventory), "--forks", "1"], env=env, cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lab = Lab(inventory, tmp_path / "state", out, tmp_path)
    try:
        _wait_for("n1 admitted", lambda: _admitted(lab) == ["n1"], proc)
        (pid,) = [pid for role, pid in (line.split() for line in (out / "pids").read_text().splitlines())
                  if role == "grandchild"]
        os.kill(int(pid), signal.SIGTERM)
        _wait_for(f"SIGTERM noted by {pid}", lambda: (out / f"term-{pid}").exists(), proc)
        assert _alive(int(pid))
    finally:
        _cleanup(lab)
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
