"""The fleet engine beyond one kind: chunks of long-lived processes, drains ahead of admission,
the start order from recorded durations, commit-before-go, the per-node deadline, Ctrl-C, and
kinds (registry, a second kind, resume by the stored run's kind).

Ansible is FakeAnsible (tests/helpers/fake_ansible.py): each host asks the engine's real gate.
"""

from __future__ import annotations

import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fake_ansible import Behaviour, FakeAnsible, GateWatch
from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.domain.rollout.budget import FailureBudget
from ufcctl.domain.rollout.plan import NodeRef, plan_batches
from ufcctl.engine.runner import RunOptions
from ufcctl.errors import InputError
from ufcctl.rollout import runs
from ufcctl.rollout.executor import RolloutJob, execute_rollout
from ufcctl.rollout.kind import KINDS, KindRegistry, RolloutKind, RolloutRequest, registered
from ufcctl.rollout.store import StateStore

MARKER = "Report the node done to the rollout engine"


def inventory(n: int, group: str = "npu_node") -> Inventory:
    hosts = {f"w{i:02d}": Host(f"w{i:02d}", {"npu_tor_id": i // 2}, frozenset({"all", group}))
             for i in range(n)}
    return Inventory("inv", hosts, {group: Group(group, hosts=tuple(hosts))})


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StateStore:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    s = StateStore(tmp_path / "state.db")
    yield s
    s.close()


def upgrade_kind() -> RolloutKind:
    kind = registered().get("upgrade-drivers")
    assert kind is not None
    return kind


def start(store: StateStore, fake: FakeAnsible, n: int, kind: RolloutKind | None = None, **kw: Any):
    inv = inventory(n, (kind or upgrade_kind()).group)
    request = RolloutRequest(**{"inventory_dir": Path("/inv"), "batch": 2, **kw})
    return runs.start(kind or upgrade_kind(), request, store, run_fn=fake, loader=lambda _p: inv)


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


class InterruptingObserver:
    """Presses Ctrl-C (SIGINT to this process: KeyboardInterrupt in the main thread) when the third
    node starts."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def rollout_started(self, run_id: str, plan: Any, todo: Any) -> None:
        pass

    def node_started(self, host: str, batch: int) -> None:
        self.started.append(host)
        if len(self.started) == 3:
            signal.raise_signal(signal.SIGINT)

    def node_finished(self, *args: Any) -> None:
        pass

    def stopped(self, reason: str) -> None:
        pass


def test_ctrl_c_cancels_the_processes_and_resume_finishes_every_node_once(store: StateStore) -> None:
    hold = threading.Event()  # never set: nodes in flight stay in flight until cancelled
    fake = FakeAnsible({f"w{i:02d}": Behaviour(hold=hold) for i in range(8)})
    inv = inventory(8)
    request = RolloutRequest(inventory_dir=Path("/inv"), batch=4)
    with pytest.raises(KeyboardInterrupt):
        runs.start(upgrade_kind(), request, store, run_fn=fake, loader=lambda _p: inv,
                   observer=InterruptingObserver())
    run_id = store.runs()[0].run_id
    assert store.run(run_id).status == "interrupted"
    states = {n.host: n.state for n in store.nodes(run_id)}
    assert set(states.values()) == {"pending"}  # in-flight nodes went back to pending
    assert fake.running == 0  # every process ended (cancelled)
    again = FakeAnsible()
    summary = runs.resume(run_id, store, run_fn=again, loader=lambda _p: inv)
    assert summary.status == "done" and again.starts == {f"w{i:02d}": 1 for i in range(8)}


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
    request = RolloutRequest(inventory_dir=Path("/inv"), batch=2, options={"image": "mindspore:2.3"})
    fake = FakeAnsible({"w04": Behaviour("failed")}, marker="Image pulled")
    summary = runs.start(heat, request, store, run_fn=fake, loader=lambda _p: inv)
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
