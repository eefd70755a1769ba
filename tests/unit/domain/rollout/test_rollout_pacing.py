"""Join pacing: the token bucket never admits more than burst + rate x elapsed, and waits exactly enough."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ufcctl.domain.rollout.pacing import Pacer, paced_seconds


def test_no_rate_means_no_ceiling() -> None:
    pacer = Pacer(None)
    assert pacer.allowance(0.0) is None and pacer.wait(0.0) == 0.0
    pacer.take(10_000, 0.0)  # nothing to spend


def test_one_per_interval_after_the_burst() -> None:
    pacer = Pacer(10.0, burst=2)
    assert pacer.allowance(0.0) == 2
    pacer.take(2, 0.0)
    assert pacer.allowance(0.0) == 0 and pacer.wait(0.0) == pytest.approx(0.1)
    assert pacer.allowance(0.05) == 0 and pacer.wait(0.05) == pytest.approx(0.05)
    assert pacer.allowance(0.1) == 1
    pacer.take(1, 0.1)
    assert pacer.allowance(10.0) == 2  # an idle pacer saves up no more than its burst


def test_taking_more_than_the_allowance_is_a_bug_and_bad_settings_are_refused() -> None:
    pacer = Pacer(1.0)
    with pytest.raises(ValueError, match="exceed the allowance"):
        pacer.take(2, 0.0)
    for rate in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="rate"):
            Pacer(rate)
    with pytest.raises(ValueError, match="burst"):
        Pacer(1.0, burst=0)


@settings(max_examples=200, deadline=None)
@given(rate=st.floats(0.5, 200.0), burst=st.integers(1, 20),
       steps=st.lists(st.tuples(st.floats(0.0, 2.0), st.integers(0, 50)), min_size=1, max_size=60))
def test_admissions_never_exceed_burst_plus_rate_times_elapsed(rate: float, burst: int,
                                                               steps: list[tuple[float, int]]) -> None:
    pacer = Pacer(rate, burst=burst)
    now, admitted, start = 0.0, 0, 0.0
    for gap, wanted in steps:
        now += gap
        allowed = pacer.allowance(now)
        assert allowed is not None
        count = min(wanted, allowed)
        pacer.take(count, now)
        admitted += count
        assert admitted <= burst + rate * (now - start) + 1e-6
        if allowed == 0:  # waiting the time it names makes one admission possible (asked of a copy:
            probe = copy.deepcopy(pacer)  # the pacer's clock only moves forward)
            assert probe.allowance(now + probe.wait(now) + 1e-9) == 1


def test_the_pacing_floor_of_a_fleet() -> None:
    assert paced_seconds(16_000, 10.0) == pytest.approx(1599.9)
    assert paced_seconds(1, 10.0) == 0.0 and paced_seconds(500, None) == 0.0
