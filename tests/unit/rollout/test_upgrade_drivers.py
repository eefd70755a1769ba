"""The upgrade-drivers use case driven by FakeAnsible (tests/helpers/fake_ansible.py), a test double
of engine.runner.run_playbook that plays a chunk like a host_pinned play behind the real rollout gate:
each host asks the engine's gate socket and, on go, reports the role's marker task (done) or a
failure, exactly through the RunObserver calls the real runner makes. No containers; these tests
check window, budget, canary, state and resume logic."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.helpers.fake_ansible import Behaviour, FakeAnsible, GateWatch
from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.engine.locks import hold_nodes
from ufcctl.errors import InputError
from ufcctl.rollout import planning, runs
from ufcctl.rollout.catalog import KINDS
from ufcctl.rollout.kind import RolloutRequest
from ufcctl.rollout.kinds.upgrade_drivers import KIND, upgrade_options
from ufcctl.rollout.runs import resume, summarize
from ufcctl.rollout.store import StateStore

FakeRunner = FakeAnsible


def make_inventory(n: int, per_tor: int = 2) -> Inventory:
    hosts = {}
    for i in range(n):
        name = f"w{i:02d}"
        hosts[name] = Host(name, {"npu_tor_id": i // per_tor, "npu_super_pod_id": i // (2 * per_tor)},
                           frozenset({"all", "kube_node", "npu_node"}))
    hosts["cp1"] = Host("cp1", {}, frozenset({"all", "kube_control_plane"}))
    groups = {
        "npu_node": Group("npu_node", hosts=tuple(h for h in hosts if h.startswith("w"))),
        "kube_node": Group("kube_node", children=("npu_node",)),
        "kube_control_plane": Group("kube_control_plane", hosts=("cp1",)),
    }
    return Inventory("inv", hosts, groups)


def request(**kw) -> RolloutRequest:
    own = {k: kw.pop(k) for k in ("version", "firmware_version", "node_timeout") if k in kw}
    return RolloutRequest(**{"inventory_dir": Path("/inv"), "batch": 4, **kw}, options=upgrade_options(**own))


def run(store: StateStore, fake: FakeRunner, n: int = 12, retry_failed: bool = False, **kw):
    inventory = make_inventory(n)
    return runs.start(KIND, request(**kw), store, inventory, run_fn=fake, retry_failed=retry_failed)


def test_full_rollout_marks_every_node_done_once(store: StateStore) -> None:
    fake = FakeRunner()
    summary = run(store, fake, n=10, window=2)
    assert summary.status == "done" and summary.counts["done"] == 10 and summary.changed == 10
    assert fake.starts == {f"w{i:02d}": 1 for i in range(10)}
    assert fake.processes == 1  # freed slots were refilled through the gate, with no new process
    assert fake.max_in_flight <= 8  # window 2 x batch 4
    assert all(n.seconds is not None for n in summary.nodes)
    assert store.run(summary.run_id).pid is None
    # the first control plane rides along in every chunk's inventory (the NPU taint's removal is
    # delegated to it), never as a target
    assert [h.name for h in fake.calls[0][2].context] == ["cp1"] and "cp1" not in fake.starts


def test_unchanged_nodes_are_done_but_not_changed(store: StateStore) -> None:
    fake = FakeRunner({f"w{i:02d}": Behaviour(changed=False) for i in range(4)})
    summary = run(store, fake, n=4)
    assert summary.counts["done"] == 4 and summary.changed == 0


def test_a_straggler_does_not_hold_back_the_rest(store: StateStore) -> None:
    released = threading.Event()
    fake = FakeRunner({"w00": Behaviour(hold=released)})
    ended: list[str] = []

    def on_end(host: str) -> None:
        ended.append(host)
        if len(ended) == 11:  # all others done while w00 is still in flight
            released.set()

    fake.on_end = on_end
    summary = run(store, fake, n=12)
    assert summary.status == "done"
    assert ended[-1] == "w00"
    assert fake.max_in_flight <= 4


def started_together(fake: FakeAnsible, count: int) -> threading.Event:
    """An event set once `count` nodes have passed the gate (hold nodes on it to end them together)."""
    together = threading.Event()
    seen: list[str] = []

    def on_start(host: str) -> None:
        seen.append(host)
        if len(seen) >= count:
            together.set()

    fake.on_start = on_start
    return together


def first_four_first(monkeypatch: pytest.MonkeyPatch) -> FakeAnsible:
    """A fake whose hosts reach the gate in inventory order, so the window's 4 slots go to w00-w03.
    Left to thread timing, w04 or w05 (also at the gate: forks are 4 + 2) could ask before w03 and
    take its slot; then which nodes ran before a stop, and which stay pending, would vary."""
    return FakeRunner(arrive=GateWatch(monkeypatch).in_inventory_order)


def failed_first(fake: FakeAnsible, failing: set[str]) -> threading.Event:
    """An event set once one of `failing` has ended (hold the others on it: they end after the stop)."""
    ended = threading.Event()
    fake.on_end = lambda host: ended.set() if host in failing else None
    return ended


def test_budget_stops_new_work_and_in_flight_work_finishes(store: StateStore,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    fake = first_four_first(monkeypatch)
    together = started_together(fake, 4)  # the failures come once all four started ...
    stopped = failed_first(fake, {"w01", "w02"})  # ... and the others end after the stop
    fake.behaviours = {
        "w00": Behaviour(hold=stopped), "w01": Behaviour("failed", hold=together),
        "w02": Behaviour("unreachable", hold=together),
        "w03": Behaviour(seconds=0.3, hold=stopped),  # still in flight when the budget is exceeded
    }
    summary = run(store, fake, n=12, max_fail=20)  # the first failure (1 of at least 4) exceeds 20%
    assert summary.status == "stopped"
    assert summary.message and "exceeds --max-fail 20%" in summary.message
    states = {n.host: n.state for n in summary.nodes}
    assert states["w03"] == "done"  # in flight work finished
    assert [h for h, s in states.items() if s == "pending"] == [f"w{i:02d}" for i in range(4, 12)]
    assert set(fake.starts) == {"w00", "w01", "w02", "w03"}
    reasons = {n.host: n.reason for n in summary.failed}
    assert "installer rc 1" in reasons["w01"] and "unreachable" in reasons["w02"]


def test_failures_within_budget_finish_the_rollout_as_failed(store: StateStore) -> None:
    fake = FakeRunner({"w05": Behaviour("failed")})
    summary = run(store, fake, n=12, max_fail=25)
    assert summary.status == "failed"
    assert summary.counts == {"pending": 0, "running": 0, "done": 11, "failed": 1, "skipped": 0}


def test_canary_runs_alone_and_its_failure_stops_everything(store: StateStore) -> None:
    fake = FakeRunner({"w00": Behaviour("failed")})
    summary = run(store, fake, n=8, canary=1, max_fail=50)
    assert fake.calls[0][1][0] == "w00" and fake.processes == 1  # the canary leads the inventory
    assert set(fake.starts) == {"w00"}  # the gate let no other node through
    assert all(answers == ["stop"] for host, answers in fake.answers.items() if host != "w00")
    assert summary.status == "stopped" and "canary" in (summary.message or "")
    assert summary.counts["pending"] == 7


def test_node_that_never_reaches_the_marker_fails_with_the_runs_reason(store: StateStore) -> None:
    fake = FakeRunner({"w02": Behaviour("silent")})
    summary = run(store, fake, n=4, max_fail=50)
    reason = {n.host: n.reason for n in summary.failed}["w02"]
    assert "marker task" in reason


def test_a_runner_that_raises_fails_its_nodes(store: StateStore) -> None:
    fake = FakeRunner(raise_error=RuntimeError("ansible-playbook vanished"))
    summary = run(store, fake, n=4, max_fail=100)
    assert summary.counts["failed"] == 4
    assert all("ansible-playbook vanished" in (n.reason or "") for n in summary.nodes)


def test_options_carry_versions_timeout_check_mode_and_forks(store: StateStore) -> None:
    fake = FakeRunner()
    summary = run(store, fake, n=4, version="24.1.rc3", firmware_version="7.5.0.2", dry_run=True,
                  node_timeout=60)
    options = fake.calls[0][2]
    assert options.check is True and options.forks == 6  # the window (4) + 2 hosts waiting at the gate
    assert options.extravars == {
        "ascend_driver_version": "24.1.rc3", "ascend_driver_firmware_version": "7.5.0.2",
        "ascend_driver_install_timeout": 60,
    }
    assert summary.dry_run and summary.steps["drain"].startswith("skipped: --dry-run")


def test_drain_step_is_reported_skipped_without_a_kubeconfig(store: StateStore) -> None:
    summary = run(store, FakeRunner(), n=2)
    assert summary.steps["drain"].startswith("skipped: no kubeconfig")
    assert store.run(summary.run_id).steps["drain"] == summary.steps["drain"]


def _crashed_run(store: StateStore, n: int = 8) -> str:
    """A run whose controller died: 3 nodes done, 2 running, the rest pending, owner pid gone."""
    fake = FakeRunner()
    summary = run(store, fake, n=n)
    run_id = summary.run_id
    with store._tx() as db:  # rewind it into the state a kill -9 leaves behind
        db.execute("UPDATE nodes SET state = 'pending', attempts = 0 WHERE run_id = ? AND host >= 'w03'",
                   (run_id,))
        db.execute("UPDATE runs SET status = 'running', pid = 999999999 WHERE run_id = ?", (run_id,))
    store.mark_running(run_id, ["w03", "w04"], "old-run")
    return run_id


def test_resume_never_redoes_done_nodes(store: StateStore) -> None:
    run_id = _crashed_run(store)
    inventory = make_inventory(8)
    fake = FakeRunner()
    summary = resume(run_id, store, kinds=KINDS, run_fn=fake, loader=lambda _p: inventory)
    assert set(fake.starts) == {"w03", "w04", "w05", "w06", "w07"}  # running + pending, not done
    assert summary.status == "done" and summary.counts["done"] == 8
    attempts = {n.host: n.attempts for n in summary.nodes}
    assert attempts["w03"] == 2 and attempts["w00"] == 1


def test_resume_refuses_a_run_whose_controller_is_alive(store: StateStore) -> None:
    run_id = _crashed_run(store)
    with hold_nodes(run_id, ["w03"], directory=store.lock_dir):  # as its living controller does
        with pytest.raises(InputError, match=f"run {run_id} is already being run"):
            resume(run_id, store, kinds=KINDS, run_fn=FakeRunner(), loader=lambda _p: make_inventory(8))
    assert store.nodes(run_id, ("running",))  # refused before touching a node


def test_resume_after_a_crash_ignores_a_reused_pid(store: StateStore) -> None:
    """The lock, not the pid, tells whether a run is alive: here its pid is this very process."""
    run_id = _crashed_run(store)
    store.claim_run(run_id)  # the recorded pid is alive (as a reused pid would be), no lock is held
    summary = resume(run_id, store, kinds=KINDS, run_fn=FakeRunner(), loader=lambda _p: make_inventory(8))
    assert summary.status == "done"


def test_resume_unknown_run(store: StateStore) -> None:
    with pytest.raises(InputError, match="no run nope"):
        resume("nope", store, kinds=KINDS, run_fn=FakeRunner(), loader=lambda _p: make_inventory(8))


def test_resume_after_budget_stop_with_retry_failed(store: StateStore,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    failing = first_four_first(monkeypatch)
    together = started_together(failing, 4)
    stopped = failed_first(failing, {"w01", "w02"})
    failing.behaviours = {"w00": Behaviour(hold=stopped), "w01": Behaviour("failed", hold=together),
                          "w02": Behaviour("failed", hold=together), "w03": Behaviour(hold=stopped)}
    summary = run(store, failing, n=8, max_fail=20)
    assert summary.status == "stopped"
    first = {n.host: n.state for n in summary.nodes}
    assert first == {"w00": "done", "w01": "failed", "w02": "failed", "w03": "done",
                     **{f"w{i:02d}": "pending" for i in range(4, 8)}}
    plain = FakeRunner()
    inventory = make_inventory(8)
    again = resume(summary.run_id, store, kinds=KINDS, run_fn=plain, loader=lambda _p: inventory)
    assert set(plain.starts) == {f"w{i:02d}" for i in range(4, 8)}  # failed nodes left alone
    assert again.status == "failed" and again.counts["failed"] == 2
    retry = FakeRunner()
    final = resume(summary.run_id, store, kinds=KINDS, retry_failed=True, run_fn=retry,
                   loader=lambda _p: inventory)
    assert set(retry.starts) == {"w01", "w02"}
    assert final.status == "done"


def test_upgrade_retry_failed_starts_a_new_run_with_the_last_failures(store: StateStore) -> None:
    first = run(store, FakeRunner({"w03": Behaviour("failed")}), n=6, max_fail=50)
    fake = FakeRunner()
    second = run(store, fake, n=6, retry_failed=True)
    assert second.run_id != first.run_id and set(fake.starts) == {"w03"}
    assert [n.host for n in second.nodes] == ["w03"]
    with pytest.raises(InputError, match="no failed or skipped node"):
        run(store, FakeRunner(), n=6, retry_failed=True)


def test_resume_skips_nodes_gone_from_the_inventory(store: StateStore) -> None:
    run_id = _crashed_run(store)
    fake = FakeRunner()
    summary = resume(run_id, store, kinds=KINDS, run_fn=fake, loader=lambda _p: make_inventory(6))
    states = {n.host: (n.state, n.reason) for n in summary.nodes}
    assert states["w07"][0] == "skipped" and "no longer in" in states["w07"][1]
    assert "w07" not in fake.starts


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"align": "rack"}, "unknown alignment", id="bad-align"),
        pytest.param({"limit": "nothing*"}, "--limit", id="limit-matches-nothing"),
        pytest.param({"canary": 99}, "canary 99", id="canary-too-big"),
    ],
)
def test_bad_requests_touch_nothing(store: StateStore, kwargs: dict, message: str) -> None:
    fake = FakeRunner()
    with pytest.raises(InputError, match=message):
        run(store, fake, n=4, **kwargs)
    assert fake.calls == [] and store.runs() == []


def test_plan_uses_node_seconds_or_the_last_measurement(store: StateStore) -> None:
    inventory = make_inventory(12)
    report = planning.plan(KIND, request(), store, inventory)
    assert report.projection is None and report.targets == 12 and len(report.plan.batches) == 3
    report = planning.plan(KIND, request(), store, inventory, node_seconds=60)
    assert report.projection.total_seconds == 180
    summary = run(store, FakeRunner(), n=4)
    run(store, FakeRunner(), n=4, dry_run=True)  # newer, but a dry run measures nothing
    report = planning.plan(KIND, request(), store, inventory)
    assert report.projection is not None and summary.run_id in report.projection.source
    assert len(store.runs()) == 2  # planning created no run


def test_plan_by_tor_keeps_tors_whole(store: StateStore) -> None:
    report = planning.plan(KIND, request(align="tor", batch=3), store, make_inventory(8))
    assert [b.hosts for b in report.plan.batches] == [("w00", "w01"), ("w02", "w03"), ("w04", "w05"),
                                                       ("w06", "w07")]


def test_summarize_unknown_run(store: StateStore) -> None:
    with pytest.raises(InputError):
        summarize(store, "nope")


class RecordingGuard:
    """Test double for the drain guard: skips w01, fails to prepare w02, records releases."""

    def __init__(self) -> None:
        self.released: list[tuple[str, bool]] = []

    def at_target(self, hosts: Sequence[Host]) -> set[str]:
        return set()

    def prepare(self, host: Host) -> str | None:
        if host.name == "w02":
            raise RuntimeError("drain timed out")
        return "NPU pods running (train/job-0)" if host.name == "w01" else None

    def release(self, host: Host, ok: bool) -> None:
        self.released.append((host.name, ok))


def test_guard_skips_fails_and_releases(store: StateStore, monkeypatch: pytest.MonkeyPatch) -> None:
    guard = RecordingGuard()
    monkeypatch.setattr("ufcctl.rollout.drain.drain_guard", lambda **_: (guard, "cordon + drain"))
    fake = FakeRunner({"w03": Behaviour("failed")})
    summary = run(store, fake, n=4, max_fail=100)
    states = {n.host: (n.state, n.reason) for n in summary.nodes}
    assert states["w01"] == ("skipped", "NPU pods running (train/job-0)")
    assert states["w02"][0] == "failed" and "drain timed out" in states["w02"][1]
    assert set(fake.starts) == {"w00", "w03"}  # skipped and unprepared nodes never reach Ansible
    assert sorted(guard.released) == [("w00", True), ("w02", False), ("w03", False)]
    assert summary.steps["drain"] == "cordon + drain"
    assert fake.answers["w01"] == ["skip"] and fake.answers["w02"] == ["skip"]
