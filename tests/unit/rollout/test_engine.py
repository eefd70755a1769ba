"""The fleet engine beyond one kind: chunks of long-lived processes, drains ahead of admission,
the start order from recorded durations, commit-before-go, the per-node deadline, Ctrl-C, and
kinds (registry, a second kind, resume by the stored run's kind).

Ansible is FakeAnsible (tests/helpers/fake_ansible.py): each host asks the engine's real gate.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fake_ansible import HANG_GUARD, ROOT, Behaviour, FakeAnsible, GateWatch
from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.domain.rollout.budget import FailureBudget
from ufcctl.domain.rollout.plan import NodeRef, plan_batches
from ufcctl.engine.runner import RunOptions
from ufcctl.errors import InputError
from ufcctl.rollout import runs
from ufcctl.rollout.catalog import KINDS
from ufcctl.rollout.executor import execute_rollout
from ufcctl.rollout.job import RolloutJob
from ufcctl.rollout.kind import KindRegistry, RolloutKind, RolloutRequest
from ufcctl.rollout.store import StateStore

MARKER = "Report the node done to the rollout engine"


def inventory(n: int, group: str = "npu_node") -> Inventory:
    hosts = {f"w{i:02d}": Host(f"w{i:02d}", {"npu_tor_id": i // 2}, frozenset({"all", group}))
             for i in range(n)}
    return Inventory("inv", hosts, {group: Group(group, hosts=tuple(hosts))})


def upgrade_kind() -> RolloutKind:
    kind = KINDS.get("upgrade-drivers")
    assert kind is not None
    return kind


def start(store: StateStore, fake: FakeAnsible, n: int, kind: RolloutKind | None = None, **kw: Any):
    inv = inventory(n, (kind or upgrade_kind()).group)
    request = RolloutRequest(**{"inventory_dir": Path("/inv"), "batch": 2, **kw})
    return runs.start(kind or upgrade_kind(), request, store, inv, run_fn=fake)


# -- processes ----------------------------------------------------------------------------------


def test_one_process_per_chunk_in_start_order_and_the_next_starts_before_the_last_drains(
        store: StateStore) -> None:
    fake = FakeAnsible()
    second = threading.Event()  # the first chunk's nodes end only once the second process started
    fake.behaviours = {f"w{i:02d}": Behaviour(hold=second) for i in range(4)}
    fake.on_call = lambda run_id: second.set() if run_id.endswith("-c002") else None
    summary = start(store, fake, 10, chunk_size=4)  # capacity 2
    assert summary.status == "done" and summary.counts["done"] == 10
    assert [c[1] for c in fake.calls] == [("w00", "w01", "w02", "w03"), ("w04", "w05", "w06", "w07"),
                                          ("w08", "w09")]
    assert fake.overlaps >= 1  # a process started while the one before still had nodes in flight
    assert all(count == 1 for count in fake.starts.values())
    ansible_runs = {n.host: n.ansible_run for n in store.nodes(summary.run_id)}
    assert ansible_runs["w00"].endswith("-c001") and ansible_runs["w09"].endswith("-c003")


def test_forks_are_the_window_plus_a_few_and_capacity_is_never_exceeded(store: StateStore) -> None:
    fake = FakeAnsible({f"w{i:02d}": Behaviour(seconds=0.02) for i in range(30)})
    summary = start(store, fake, 30, batch=3, window=2)
    assert summary.counts["done"] == 30 and fake.processes == 1
    assert fake.calls[0][2].forks == 8  # 6 slots + 2 hosts waiting at the gate
    assert fake.max_in_flight <= 6


# -- drains ahead -------------------------------------------------------------------------------


class SlowGuard:
    """Test double for the drain guard: each prepare takes a while; records overlap and order."""

    def __init__(self, seconds: float = 0.05):
        self.seconds = seconds
        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        self.prepared: list[str] = []
        self.released: list[tuple[str, bool]] = []

    def at_target(self, hosts: Sequence[Host]) -> set[str]:
        return set()

    def prepare(self, host: Host) -> str | None:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        time.sleep(self.seconds)
        with self.lock:
            self.active -= 1
            self.prepared.append(host.name)
        return None

    def release(self, host: Host, ok: bool) -> None:
        with self.lock:
            self.released.append((host.name, ok))


def test_drains_overlap_and_run_ahead_of_admission(store: StateStore,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    guard = SlowGuard()
    monkeypatch.setattr("ufcctl.rollout.drain.drain_guard", lambda **_: (guard, "cordon + drain"))
    fake = FakeAnsible()
    admitted_prepared: list[bool] = []
    fake.on_start = lambda host: admitted_prepared.append(host in guard.prepared)
    summary = start(store, fake, 12, batch=4)
    assert summary.counts["done"] == 12
    assert guard.max_active > 1  # drains ran in parallel, not one after another
    assert all(admitted_prepared) and len(admitted_prepared) == 12  # no node admitted before its drain
    assert sorted(guard.released) == [(f"w{i:02d}", True) for i in range(12)]


def test_drained_nodes_that_never_start_are_uncordoned_after_a_stop(
        store: StateStore, monkeypatch: pytest.MonkeyPatch) -> None:
    guard = SlowGuard(seconds=0.0)
    monkeypatch.setattr("ufcctl.rollout.drain.drain_guard", lambda **_: (guard, "cordon + drain"))
    fake = FakeAnsible({"w00": Behaviour("failed", seconds=0.2)})
    summary = start(store, fake, 12, batch=1, max_fail=0)
    assert summary.status == "stopped"
    started = set(fake.starts)
    released = dict(guard.released)
    # every drained node is released: the ones that ran by their outcome, the others back into service
    assert set(released) == set(guard.prepared)
    assert all(ok for host, ok in released.items() if host not in started)
    assert released["w00"] is False


# -- order and state ----------------------------------------------------------------------------


def _record_durations(store: StateStore, run_id: str, seconds: dict[str, float]) -> None:
    with store._tx() as db:
        for host, value in seconds.items():
            db.execute("UPDATE nodes SET started = 0, finished = ? WHERE run_id = ? AND host = ?",
                       (value, run_id, host))


def test_the_second_run_starts_the_longest_recorded_nodes_first(
        store: StateStore, monkeypatch: pytest.MonkeyPatch) -> None:
    first = start(store, FakeAnsible(), 6, batch=1)
    _record_durations(store, first.run_id, {"w00": 10, "w01": 50, "w02": 20, "w03": 40, "w04": 30, "w05": 60})
    # Hosts reach the gate in inventory order, as host_pinned starts them. Left to their threads'
    # timing, w01 could ask before w05 did, and a free slot rightly goes to a host that asks rather
    # than idle for one that has not (the next test pins down who wins among hosts that wait together).
    watch = GateWatch(monkeypatch)
    fake = FakeAnsible(arrive=watch.in_inventory_order)
    start(store, fake, 6, batch=1)  # capacity 1
    assert fake.calls[0][1] == ("w05", "w01", "w03", "w04", "w02", "w00")  # the inventory in start order
    assert list(fake.starts) == ["w05", "w01", "w03", "w04", "w02", "w00"]
    plain = FakeAnsible(arrive=watch.in_inventory_order)
    start(store, plain, 6, batch=1, order="plan")
    assert plain.calls[0][1] == tuple(f"w{i:02d}" for i in range(6))
    assert list(plain.starts) == [f"w{i:02d}" for i in range(6)]


def test_a_freed_slot_goes_to_the_waiting_host_first_in_start_order_not_the_first_to_ask(
        store: StateStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Capacity 1, start order w00..w03. w00 runs until w02 and then w01 (in that order) wait at the
    gate; when w00 ends, both are waiting and the slot must go to w01, earlier in start order, though
    w02 asked first. An engine that admitted in arrival order would start w02 here."""
    watch = GateWatch(monkeypatch)
    fake = FakeAnsible({"w00": Behaviour(hold=watch.taken_in("w01"))},
                       arrive=watch.after({"w02": "w00", "w01": "w02"}))
    summary = start(store, fake, 4, batch=1, order="plan")
    assert summary.status == "done"
    assert fake.arrivals[:3] == ["w00", "w02", "w01"]  # the arrivals were as meant
    assert list(fake.starts) == ["w00", "w01", "w02", "w03"]


def test_a_node_is_committed_running_before_its_gate_opens(store: StateStore) -> None:
    seen: dict[str, str] = {}
    fake = FakeAnsible()

    def on_start(host: str) -> None:  # another connection, as a reader after kill -9 would see it
        with sqlite3.connect(store.path) as db:
            seen[host] = db.execute("SELECT state FROM nodes WHERE host = ? ORDER BY rowid DESC LIMIT 1",
                                    (host,)).fetchone()[0]

    fake.on_start = on_start
    start(store, fake, 4, batch=2)
    assert seen == {f"w{i:02d}": "running" for i in range(4)}


def test_a_hung_node_is_failed_at_its_deadline_and_its_process_cancelled(store: StateStore) -> None:
    forever = threading.Event()  # never set: w01 hangs until its process is cancelled
    fake = FakeAnsible({"w01": Behaviour(hold=forever)})
    plan = plan_batches([NodeRef(f"w{i:02d}") for i in range(4)], batch_size=2)
    inv = inventory(4)
    rows = [(h, 0, i) for i, h in enumerate(plan.hosts())]
    store.create_run("r1", "upgrade-drivers", "/inv", {"batch": 2}, rows)
    job = RolloutJob(run_id="r1", playbook=Path("/x.yml"), plan=plan, hosts=inv.hosts,
                     order=tuple(plan.hosts()),
                     options=RunOptions(forks=4), marker_task=MARKER, budget=FailureBudget(100, floor=2),
                     node_deadline=0.3, settle_seconds=0.2)
    assert execute_rollout(job, store, fake) is None
    states = {n.host: (n.state, n.reason) for n in store.nodes("r1")}
    assert states["w01"][0] == "failed" and "failed as hung" in states["w01"][1]
    assert [s for s, _ in states.values()].count("done") == 3


# The rollout of the Ctrl-C test, in a process of its own: it prints a line per node started and,
# once interrupted, what its FakeAnsible saw; it exits 130 as the CLI does after Ctrl-C.
_CTRL_C_CHILD = """
import json, signal, sys, threading
from pathlib import Path
from tests.helpers.fake_ansible import Behaviour, FakeAnsible
from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.rollout import runs
from ufcctl.rollout.catalog import KINDS
from ufcctl.rollout.kind import RolloutRequest
from ufcctl.rollout.store import StateStore

# As under a terminal: a job started in the background by a non-interactive shell inherits SIGINT
# ignored, and Python then leaves it ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)

class Progress:
    def rollout_started(self, *args): pass
    def node_started(self, host, batch): print("started", host, flush=True)
    def node_finished(self, *args): pass
    def stopped(self, reason): pass

hosts = {f"w{i:02d}": Host(f"w{i:02d}", {"npu_tor_id": i // 2}, frozenset({"all", "npu_node"}))
         for i in range(8)}
inv = Inventory("inv", hosts, {"npu_node": Group("npu_node", hosts=tuple(hosts))})
hold = threading.Event()  # never set: nodes in flight stay in flight until their process is cancelled
fake = FakeAnsible({h: Behaviour(hold=hold) for h in hosts})
store = StateStore(Path(sys.argv[1]))
try:
    runs.start(KINDS.get("upgrade-drivers"), RolloutRequest(inventory_dir=Path("/inv"), batch=4),
               store, inv, run_fn=fake, observer=Progress())
except KeyboardInterrupt:
    print(json.dumps({"running": fake.running, "starts": fake.starts}), flush=True)
    sys.exit(130)
print("not interrupted", flush=True)
"""


def test_ctrl_c_cancels_the_processes_and_resume_finishes_every_node_once(store: StateStore,
                                                                          tmp_path: Path) -> None:
    """Ctrl-C is SIGINT from outside, at whatever moment, to a process whose main thread runs the
    engine (as under the CLI): here once the third node started, with every node in flight held.

    The rollout runs in a child process, not in this one: SIGINT here would raise KeyboardInterrupt
    in this process's main thread, which under pytest-xdist belongs to the worker's own machinery as
    much as to this test, and a KeyboardInterrupt that escapes the engine kills the worker."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]  # ufcctl and tests.helpers
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    errors = tmp_path / "child.err"
    with errors.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-c", _CTRL_C_CHILD, str(store.path)], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=err, text=True)
    watchdog = threading.Timer(HANG_GUARD, proc.kill)  # a hang fails this test, not the whole run
    watchdog.start()
    try:
        assert proc.stdout is not None
        started: list[str] = []
        while len(started) < 3:
            line = proc.stdout.readline()
            if not line.startswith("started "):
                proc.kill()
                proc.wait()
                pytest.fail(f"expected a started node, got {line!r}; stderr: {errors.read_text()}")
            started.append(line.split()[1])
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate()
    finally:
        watchdog.cancel()
    assert proc.returncode == 130, f"rc {proc.returncode}: {out}\n{errors.read_text()}"
    report = json.loads(out.strip().splitlines()[-1])
    assert report["running"] == 0  # every process ended (cancelled)
    assert 3 <= len(report["starts"]) <= 4  # the window holds 4 (held in flight); none ran to its end
    run_id = store.runs()[0].run_id
    assert store.run(run_id).status == "interrupted"
    nodes = {n.host: n for n in store.nodes(run_id)}
    assert {n.state for n in nodes.values()} == {"pending"}  # nodes in flight went back to pending
    # every node that started is recorded as an attempt, and no other node
    assert {h for h, n in nodes.items() if n.attempts} == set(report["starts"])
    again = FakeAnsible()
    handler = signal.getsignal(signal.SIGINT)
    summary = runs.resume(run_id, store, kinds=KINDS, run_fn=again, loader=lambda _p: inventory(8))
    assert summary.status == "done" and again.starts == {f"w{i:02d}": 1 for i in range(8)}
    assert signal.getsignal(signal.SIGINT) is handler  # the engine put back the handler it replaced


class PressingClock:
    """The engine's clock, which presses Ctrl-C (SIGINT to this very thread, the main one) once
    `pressed` is due: the main loop reads the clock mid-step, holding its lock."""

    def __init__(self, due: threading.Event) -> None:
        self.due = due
        self.pressed = False
        self.raised_here = False

    def __call__(self) -> float:
        if self.due.is_set() and not self.pressed and threading.current_thread() is threading.main_thread():
            self.pressed = True
            try:
                signal.raise_signal(signal.SIGINT)  # Python runs the handler before this returns
            except KeyboardInterrupt:
                self.raised_here = True
                raise
        return time.monotonic()


def test_a_ctrl_c_in_the_middle_of_a_step_stops_the_rollout_at_the_next(store: StateStore) -> None:
    """Ctrl-C must not raise wherever the main loop happens to be (say, between taking a host off the
    waiting list and handing its go to the writer: that host would wait at the gate for ever). The
    engine's handler only asks for a stop: the step finishes, the loop stops, then KeyboardInterrupt.

    Runs here only on the main thread, where the engine installs that handler and where this test's
    own SIGINT goes; elsewhere the subprocess test above covers Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("not on the main thread: the engine installs no SIGINT handler here")
    two = threading.Event()
    fake = FakeAnsible({f"w{i:02d}": Behaviour(hold=threading.Event()) for i in range(4)})  # never released
    fake.on_start = lambda _host: two.set() if len(fake.starts) >= 2 else None
    plan = plan_batches([NodeRef(f"w{i:02d}") for i in range(4)], batch_size=2)
    rows = [(h, 0, i) for i, h in enumerate(plan.hosts())]
    store.create_run("r1", "upgrade-drivers", "/inv", {"batch": 2}, rows)
    job = RolloutJob(run_id="r1", playbook=Path("/x.yml"), plan=plan, hosts=inventory(4).hosts,
                     order=tuple(plan.hosts()), options=RunOptions(forks=4), marker_task=MARKER,
                     budget=FailureBudget(100, floor=2))
    clock = PressingClock(two)
    # The handler the engine replaces is Python's own (a background job may have inherited SIG_IGN).
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            execute_rollout(job, store, fake, clock=clock)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    finally:
        signal.signal(signal.SIGINT, before)
    assert clock.pressed and not clock.raised_here
    assert fake.running == 0 and len(fake.starts) == 2
    nodes = store.nodes("r1")
    assert {n.state for n in nodes} == {"pending"}
    assert {n.host for n in nodes if n.attempts} == set(fake.starts)


# -- kinds --------------------------------------------------------------------------------------


def test_the_registry_refuses_a_second_kind_of_the_same_name() -> None:
    registry = KindRegistry()
    kind = RolloutKind("pre-heat", "pre-heat.yml", "Done", "kube_node")
    registry.register(kind)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(RolloutKind("pre-heat", "other.yml", "Done", "kube_node"))
    assert registry.names() == ["pre-heat"] and registry.get("pre-heat") is kind
    with pytest.raises(ValueError, match="already registered"):
        KINDS.register(upgrade_kind())


def test_a_second_kind_runs_and_resumes_by_the_stored_runs_kind(store: StateStore) -> None:
    registry = KindRegistry()
    heat = registry.register(RolloutKind(
        "pre-heat", "pre-heat.yml", "Image pulled", "kube_node", options=("image",),
        extravars=lambda o: {"pre_heat_image": o["image"]}, hooks=lambda _r: (None, "not needed"),
    ))
    inv = inventory(6, "kube_node")
    # The budget is not what this test is about: with the default 0% a failure stops admissions, so
    # w05 ran or stayed pending by whether it asked the gate before w04's failure was recorded (CI,
    # under load, saw pending 1). 100% admits every node; w05 is made to ask last, the CI order.
    request = RolloutRequest(inventory_dir=Path("/inv"), batch=2, max_fail=100,
                             options={"image": "mindspore:2.3"})
    failed = threading.Event()
    fake = FakeAnsible({"w04": Behaviour("failed")}, marker="Image pulled",
                       on_end=lambda host: failed.set() if host == "w04" else None,
                       arrive=lambda host, _hosts: failed.wait(HANG_GUARD) if host == "w05" else None)
    summary = runs.start(heat, request, store, inv, run_fn=fake)
    assert summary.kind == "pre-heat" and summary.counts == {"pending": 0, "running": 0, "done": 5,
                                                              "failed": 1, "skipped": 0}
    assert fake.calls[0][0].startswith(f"{summary.run_id}-c") and fake.calls[0][2].extravars == {
        "pre_heat_image": "mindspore:2.3"}
    assert store.run(summary.run_id).params["image"] == "mindspore:2.3"
    again = FakeAnsible(marker="Image pulled")
    resumed = runs.resume(summary.run_id, store, retry_failed=True, run_fn=again, loader=lambda _p: inv,
                          kinds=registry)
    assert resumed.status == "done" and list(again.starts) == ["w04"]
    assert again.calls[0][2].extravars == {"pre_heat_image": "mindspore:2.3"}  # the stored options
    with pytest.raises(InputError, match="'pre-heat' rollout, a kind this ufcctl does not know"):
        runs.resume(summary.run_id, store, run_fn=again, loader=lambda _p: inv, kinds=KindRegistry())


def test_accelerate_mitogen_is_wired_and_refused_before_anything_runs_when_missing(
        store: StateStore, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeAnsible()
    monkeypatch.setattr("ufcctl.rollout.runs.mitogen_env", lambda: {})  # as if Mitogen were installed
    start(store, fake, 2, accelerate="mitogen")
    options = fake.calls[0][2]
    assert options.accelerate == "mitogen"
    assert options.extravars["ufc_rollout_strategy"] == "mitogen_host_pinned"
    monkeypatch.undo()
    missing = FakeAnsible()
    runs_before = len(store.runs())
    try:
        import ansible_mitogen  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        with pytest.raises(Exception, match="Mitogen is not installed"):
            start(store, missing, 2, accelerate="mitogen")
        assert missing.calls == [] and len(store.runs()) == runs_before
