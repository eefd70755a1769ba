"""The sliding window: claims ahead, admission through the gate, no batch barrier, canary gate,
failure budget, stop and resume counts."""

from __future__ import annotations

import pytest

from ufcctl.domain.rollout.budget import FailureBudget
from ufcctl.domain.rollout.plan import NodeRef, plan_batches
from ufcctl.domain.rollout.states import DONE, FAILED, SKIPPED
from ufcctl.domain.rollout.window import RolloutWindow


def _window(n: int, batch: int, *, window: int = 1, canary: int = 0, max_fail: float = 100,
            ahead: int = 0, order: list[str] | None = None, **counts: int) -> RolloutWindow:
    names = [f"n{i:02d}" for i in range(n)]
    plan = plan_batches([NodeRef(h) for h in names], batch_size=batch, window=window, canary=canary)
    return RolloutWindow(plan, order or names, plan.capacity, FailureBudget(max_fail, floor=batch),
                         ahead=ahead, **counts)


def _ready(w: RolloutWindow, hosts: list[str] | None = None) -> list[str]:
    """Claim, prepare, and bring to the gate every claimable node (or only `hosts` of them)."""
    claimed = w.claim()
    for host in claimed:
        if hosts is None or host in hosts:
            w.prepared(host)
            w.arrived(host)
    return claimed


def test_capacity_bounds_admissions_and_a_freed_slot_is_refilled_at_once() -> None:
    w = _window(10, 4)
    _ready(w)
    assert w.admissions() == ["n00", "n01", "n02", "n03"]
    assert w.claim() == [] and w.admissions() == []  # capacity 4 is used up
    w.finished("n01", DONE)
    assert _ready(w) == ["n04"]
    assert w.admissions() == ["n04"]  # one free slot, one node: no waiting for a fuller group


def test_a_straggler_holds_one_slot_not_its_batch() -> None:
    w = _window(12, 4)
    _ready(w)
    w.admissions()
    for host in ("n01", "n02", "n03"):  # n00 is slow; the other three finish
        w.finished(host, DONE)
    _ready(w)
    assert w.admissions() == ["n04", "n05", "n06"]
    assert "n00" in w.in_flight


def test_claims_run_ahead_of_the_free_slots() -> None:
    w = _window(10, 2, ahead=3)
    assert w.claim() == ["n00", "n01", "n02", "n03", "n04"]  # 2 free slots + 3 ahead
    assert w.claim() == []


def test_admission_needs_a_prepared_node_waiting_at_the_gate() -> None:
    w = _window(6, 2, ahead=2)
    w.claim()  # n00..n03
    w.arrived("n00")  # at the gate but not prepared
    w.prepared("n01")  # prepared but its host has not reached the gate
    assert w.admissions() == []
    w.prepared("n00")
    w.arrived("n02")
    w.prepared("n02")
    assert w.admissions() == ["n00", "n02"]  # the earliest admissible ones, n01 does not block n02


def test_admissions_follow_the_start_order() -> None:
    w = _window(4, 4, order=["n03", "n01", "n00", "n02"])
    for host in ["n00", "n01", "n02", "n03"]:
        w.arrived(host)
    for host in w.claim():
        w.prepared(host)
    assert w.admissions() == ["n03", "n01", "n00", "n02"]


def test_every_node_starts_exactly_once_and_the_window_completes() -> None:
    w = _window(23, 4, window=2, ahead=1)
    started: list[str] = []
    while not w.complete:
        _ready(w)
        admitted = w.admissions()
        started += admitted
        for host in sorted(w.in_flight)[:3]:
            w.finished(host, DONE)
    assert sorted(started) == [f"n{i:02d}" for i in range(23)]
    assert len(started) == len(set(started))
    assert w.done == 23


def test_canary_gates_the_rest_even_their_preparation() -> None:
    w = _window(6, 2, canary=1, ahead=4)
    assert _ready(w) == ["n00"]  # no other node is drained while the canary is unresolved
    assert w.admissions() == ["n00"]
    assert w.claim() == []
    w.finished("n00", DONE)
    _ready(w)
    assert w.admissions() == ["n01", "n02"]


def test_canary_failure_stops_everything() -> None:
    w = _window(6, 2, canary=1)
    _ready(w)
    w.admissions()
    w.finished("n00", FAILED)
    assert w.stop_reason and "canary node n00 failed" in w.stop_reason
    assert w.claim() == [] and w.admissions() == []
    assert w.complete
    assert w.remaining() == ["n01", "n02", "n03", "n04", "n05"]


def test_budget_stops_new_work_but_in_flight_finishes() -> None:
    w = _window(12, 4, max_fail=25, ahead=2)
    _ready(w)
    w.admissions()  # n00..n03; n04, n05 claimed ahead
    w.finished("n00", FAILED)  # 1 of max(1, 4) = 25%: not exceeded
    assert w.stop_reason is None
    w.finished("n01", FAILED)  # 2 of 4 = 50%
    assert w.stop_reason and "2 failed of 2 processed" in w.stop_reason
    assert w.admissions() == [] and w.claim() == []
    assert w.unclaim() == ["n04", "n05"]  # claimed ahead: back to pending
    assert not w.complete  # n02, n03 still in flight
    w.finished("n02", DONE)
    w.finished("n03", DONE)
    assert w.complete
    assert w.remaining() == [f"n{i:02d}" for i in range(4, 12)]


def test_skipped_nodes_do_not_count_against_the_budget() -> None:
    w = _window(4, 4, max_fail=0)
    w.claim()
    w.finished("n00", SKIPPED)  # skipped by its preparation, before admission
    assert w.stop_reason is None and w.skipped == 1


def test_a_node_may_end_before_it_was_claimed() -> None:
    w = _window(6, 2)
    w.finished("n05", FAILED)  # its process ended before it reached the gate
    assert "n05" not in w.remaining() and w.failed == 1


def test_resume_counts_earlier_failures_and_runs_only_todo() -> None:
    w = _window(8, 4, max_fail=25, order=["n04", "n05", "n06", "n07"], done=3, failed=1)
    _ready(w)
    assert w.admissions() == ["n04", "n05", "n06", "n07"]
    w.finished("n04", FAILED)  # 2 failed of 5 processed = 40% > 25%
    assert w.stop_reason is not None


@pytest.mark.parametrize(
    ("host", "state", "message"),
    [("n09", DONE, "not in flight, claimed or queued"), ("n00", "pending", "not a finished state")],
    ids=["ended-host", "bad-state"],
)
def test_finished_rejects_bad_reports(host: str, state: str, message: str) -> None:
    w = _window(10, 4)
    w.finished("n09", DONE)
    with pytest.raises(ValueError, match=message):
        w.finished(host, state)


def test_external_stop_keeps_first_reason() -> None:
    w = _window(4, 2)
    w.stop("interrupted")
    w.stop("later")
    assert w.stop_reason == "interrupted"
    assert w.claim() == []


def test_abandoned_nodes_go_back_to_the_queue_in_start_order() -> None:
    w = _window(6, 2)
    _ready(w)
    w.admissions()
    w.stop("interrupted")
    w.abandon("n01")
    w.finished("n00", DONE)
    assert w.complete
    assert w.remaining() == ["n01", "n02", "n03", "n04", "n05"]
    with pytest.raises(ValueError, match="not in flight"):
        w.abandon("n05")


def test_a_node_whose_process_left_the_gate_is_not_admitted() -> None:
    w = _window(4, 4)
    _ready(w)
    w.left("n00")
    assert w.admissions() == ["n01", "n02", "n03"]


@pytest.mark.parametrize(("order", "message"), [(["n00", "n00"], "listed twice"), (["x"], "not in the plan")])
def test_bad_orders_are_refused(order: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _window(2, 2, order=order)
