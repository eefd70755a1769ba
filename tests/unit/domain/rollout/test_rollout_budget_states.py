"""Failure budget arithmetic, --max-fail parsing and the node state machine."""

from __future__ import annotations

import pytest

from ufcctl.domain.rollout.budget import BudgetError, FailureBudget, parse_percent
from ufcctl.domain.rollout.states import (
    DONE,
    FAILED,
    PENDING,
    RUNNING,
    SKIPPED,
    TransitionError,
    check_transition,
    previous_states,
    run_outcome,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("10%", 10.0), ("10", 10.0), ("2.5%", 2.5), (" 0 ", 0.0), ("100%", 100.0)],
    ids=["percent", "bare", "decimal", "spaces", "hundred"],
)
def test_parse_percent(value: str, expected: float) -> None:
    assert parse_percent(value) == expected


@pytest.mark.parametrize(
    "value", ["-1", "101%", "ten", "", "5%%"], ids=["neg", "over", "word", "empty", "double"]
)
def test_parse_percent_rejects(value: str) -> None:
    with pytest.raises(BudgetError):
        parse_percent(value)


@pytest.mark.parametrize(
    ("pct", "floor", "failed", "processed", "exceeded"),
    [
        pytest.param(0, 1, 0, 5, False, id="zero-budget-no-failure"),
        pytest.param(0, 1, 1, 5, True, id="zero-budget-first-failure"),
        pytest.param(25, 1, 1, 4, False, id="exactly-at-budget-is-not-exceeded"),
        pytest.param(25, 1, 2, 4, True, id="over-budget"),
        pytest.param(10, 1, 1, 1, True, id="first-failure-no-floor"),
        pytest.param(10, 200, 1, 1, False, id="first-failure-against-batch-floor"),
        pytest.param(10, 200, 21, 21, True, id="floor-does-not-hide-many"),
        pytest.param(100, 1, 5, 5, False, id="hundred-never"),
    ],
)
def test_budget(pct: float, floor: int, failed: int, processed: int, exceeded: bool) -> None:
    assert FailureBudget(pct, floor).exceeded(failed, processed) is exceeded


def test_budget_rejects_bad_values() -> None:
    with pytest.raises(BudgetError):
        FailureBudget(120)
    with pytest.raises(BudgetError):
        FailureBudget(5, floor=0)


@pytest.mark.parametrize(
    ("old", "new"),
    [(PENDING, RUNNING), (RUNNING, DONE), (RUNNING, FAILED), (RUNNING, PENDING), (FAILED, PENDING),
     (PENDING, SKIPPED), (SKIPPED, PENDING)],
    ids=lambda v: v,
)
def test_allowed_transitions(old: str, new: str) -> None:
    check_transition(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [(DONE, PENDING), (DONE, RUNNING), (PENDING, DONE), (FAILED, DONE), ("bogus", DONE)],
    ids=lambda v: v,
)
def test_forbidden_transitions(old: str, new: str) -> None:
    with pytest.raises(TransitionError):
        check_transition(old, new)


def test_previous_states() -> None:
    assert previous_states(PENDING) == {RUNNING, FAILED, SKIPPED}
    assert previous_states(DONE) == {RUNNING}
    with pytest.raises(TransitionError):
        previous_states("bogus")


@pytest.mark.parametrize(
    ("counts", "stop", "expected"),
    [
        ({DONE: 3}, None, "done"),
        ({DONE: 3, SKIPPED: 1}, None, "done"),
        ({DONE: 2, FAILED: 1}, None, "failed"),
        ({DONE: 1, PENDING: 2}, None, "interrupted"),
        ({DONE: 1, FAILED: 2, PENDING: 2}, "budget", "stopped"),
    ],
    ids=["all-done", "skips-are-fine", "some-failed", "pending-left", "stopped"],
)
def test_run_outcome(counts: dict, stop: str | None, expected: str) -> None:
    assert run_outcome(counts, stop) == expected
