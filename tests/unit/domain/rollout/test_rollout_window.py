"""The sliding window: no batch barrier, coalescing, canary gate, failure budget, resume counts."""

from __future__ import annotations

import pytest

from ufcctl.domain.rollout.budget import FailureBudget
from ufcctl.domain.rollout.plan import NodeRef, plan_batches
from ufcctl.domain.rollout.states import DONE, FAILED, SKIPPED
from ufcctl.domain.rollout.window import RolloutWindow, WindowPolicy


def _window(n: int, batch: int, *, window: int = 1, canary: int = 0, max_fail: float = 100,
            coalesce: float = 2.0, todo: list[str] | None = None, **counts: int) -> RolloutWindow:
    names = [f"n{i:02d}" for i in range(n)]
    plan = plan_batches([NodeRef(h) for h in names], batch_size=batch, window=window, canary=canary)
    policy = WindowPolicy(capacity=plan.capacity, run_size=batch, coalesce_seconds=coalesce)
    return RolloutWindow(plan, todo or names, policy, FailureBudget(max_fail, floor=batch), **counts)


def test_first_run_is_a_full_batch_and_capacity_is_respected() -> None:
    w = _window(10, 4)
    assert w.next_run(0) == ("n00", "n01", "n02", "n03")
    assert w.next_run(0) == ()  # capacity 4 is used up
    assert len(w.in_flight) == 4


def test_window_two_starts_two_runs() -> None:
    w = _window(10, 3, window=2)
    assert len(w.next_run(0)) == 3
    assert len(w.next_run(0)) == 3
    assert w.next_run(0) == ()


def test_a_straggler_holds_one_slot_not_its_batch() -> None:
    w = _window(12, 4, coalesce=2.0)
    first = w.next_run(0)
    for host in first[1:]:  # n00 is slow; the other three finish
        w.finished(host, DONE, 5)
    # 3 slots free but a full run needs 4: wait up to the coalescing time ...
    assert w.next_run(5) == ()
    assert w.wake_at() == pytest.approx(7)
    assert w.next_run(6.9) == ()
    # ... then fill the 3 free slots while n00 is still running: no barrier
    assert w.next_run(7) == ("n04", "n05", "n06")
    assert "n00" in w.in_flight


def test_a_full_run_starts_without_waiting() -> None:
    w = _window(12, 2, coalesce=100)
    w.next_run(0)
    w.finished("n00", DONE, 1)
    w.finished("n01", DONE, 1)
    assert w.next_run(1) == ("n02", "n03")


def test_the_last_smaller_run_does_not_wait() -> None:
    w = _window(5, 4, coalesce=100)
    w.next_run(0)
    for host in ("n00", "n01", "n02", "n03"):
        w.finished(host, DONE, 1)
    assert w.next_run(1) == ("n04",)  # only one node left: a full run of what remains


def test_every_node_starts_exactly_once_and_the_window_completes() -> None:
    w = _window(23, 4, window=2, coalesce=0)
    started: list[str] = []
    now = 0.0
    while not w.complete:
        run = w.next_run(now)
        started += run
        if not run:
            now += 1
            for host in sorted(w.in_flight)[:3]:
                w.finished(host, DONE, now)
    assert sorted(started) == [f"n{i:02d}" for i in range(23)]
    assert len(started) == len(set(started))
    assert w.done == 23


def test_canary_gates_the_rest() -> None:
    w = _window(6, 2, canary=1)
    assert w.next_run(0) == ("n00",)
    assert w.next_run(10) == ()  # gate closed while the canary runs, whatever the time
    w.finished("n00", DONE, 11)
    assert w.next_run(11) == ("n01", "n02")


def test_canary_failure_stops_everything() -> None:
    w = _window(6, 2, canary=1)
    w.next_run(0)
    w.finished("n00", FAILED, 1)
    assert w.stop_reason and "canary node n00 failed" in w.stop_reason
    assert w.next_run(2) == ()
    assert w.complete
    assert w.remaining() == ["n01", "n02", "n03", "n04", "n05"]


def test_budget_stops_new_work_but_in_flight_finishes() -> None:
    w = _window(12, 4, max_fail=25)
    w.next_run(0)  # n00..n03
    w.finished("n00", FAILED, 1)  # 1 of max(1, 4) = 25%: not exceeded
    assert w.stop_reason is None
    w.finished("n01", FAILED, 1)  # 2 of 4 = 50%
    assert w.stop_reason and "2 failed of 2 processed" in w.stop_reason
    assert w.next_run(100) == ()
    assert not w.complete  # n02, n03 still in flight
    w.finished("n02", DONE, 2)
    w.finished("n03", DONE, 2)
    assert w.complete
    assert len(w.remaining()) == 8


def test_skipped_nodes_do_not_count_against_the_budget() -> None:
    w = _window(4, 4, max_fail=0)
    w.next_run(0)
    w.finished("n00", SKIPPED, 1)
    assert w.stop_reason is None and w.skipped == 1


def test_resume_counts_earlier_failures_and_runs_only_todo() -> None:
    w = _window(8, 4, max_fail=25, todo=["n04", "n05", "n06", "n07"], done=3, failed=1)
    assert w.next_run(0) == ("n04", "n05", "n06", "n07")
    w.finished("n04", FAILED, 1)  # 2 failed of 5 processed = 40% > 25%
    assert w.stop_reason is not None


@pytest.mark.parametrize(
    ("host", "state", "message"),
    [("n09", DONE, "not in flight"), ("n00", "pending", "not a finished state")],
    ids=["unknown-host", "bad-state"],
)
def test_finished_rejects_bad_reports(host: str, state: str, message: str) -> None:
    w = _window(10, 4)
    w.next_run(0)
    with pytest.raises(ValueError, match=message):
        w.finished(host, state, 1)


def test_external_stop_keeps_first_reason() -> None:
    w = _window(4, 2)
    w.stop("interrupted")
    w.stop("later")
    assert w.stop_reason == "interrupted"
    assert w.next_run(0) == ()


def test_abandoned_nodes_go_back_to_the_queue() -> None:
    w = _window(6, 2)
    w.next_run(0)
    w.stop("interrupted")
    w.abandon("n01")
    w.finished("n00", DONE, 1)
    assert w.complete
    assert w.remaining()[0] == "n01"
    with pytest.raises(ValueError, match="not in flight"):
        w.abandon("n05")
