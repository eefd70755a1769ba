"""Start order: longest expected first within the canary and topology constraints (table-driven)."""

from __future__ import annotations

import pytest

from ufcctl.domain.rollout.order import chunks, expected_durations, median, start_order
from ufcctl.domain.rollout.plan import NodeRef, plan_batches

# six nodes a..f; with --by tor: ToR 1 = a b, ToR 2 = c d, ToR 3 = e f; batches of 2
NODES = ["a", "b", "c", "d", "e", "f"]
TOR = {"a": "1", "b": "1", "c": "2", "d": "2", "e": "3", "f": "3"}


def _plan(align: str = "none", canary: int = 0, batch: int = 2):
    refs = [NodeRef(n, TOR[n] if align != "none" else None) for n in NODES]
    return plan_batches(refs, batch_size=batch, canary=canary, align=align)


CASES = [
    # (id, align, canary, known durations, rule, expected order)
    ("nothing-known-keeps-plan-order", "none", 0, {}, "longest", NODES),
    ("fifo-rule-ignores-durations", "none", 0, {"f": 9.0}, "plan", NODES),
    ("all-known-longest-first", "none", 0, {"a": 1, "b": 6, "c": 3, "d": 5, "e": 2, "f": 4}, "longest",
     ["b", "d", "f", "c", "e", "a"]),
    ("ties-keep-plan-order", "none", 0, {"a": 1, "b": 1, "c": 5, "d": 1, "e": 5, "f": 1}, "longest",
     ["c", "e", "a", "b", "d", "f"]),
    # unknown nodes take the median of the known ones (2, 4, 9 -> 4): b, c, d, e expect 4
    ("unknown-take-the-median", "none", 0, {"a": 2, "f": 9, "c": 4}, "longest",
     ["f", "b", "c", "d", "e", "a"]),
    ("canary-first-unchanged", "none", 2, {"a": 1, "b": 1, "c": 2, "d": 8, "e": 3, "f": 9}, "longest",
     ["a", "b", "f", "d", "e", "c"]),
    # by ToR: batches (a b) (c d) (e f) stay whole; the batch with the longest node goes first
    ("aligned-batches-stay-whole", "tor", 0, {"a": 1, "b": 2, "c": 3, "d": 9, "e": 5, "f": 4}, "longest",
     ["d", "c", "e", "f", "b", "a"]),
    ("aligned-tie-keeps-batch-order", "tor", 0, {"a": 5, "b": 1, "c": 1, "d": 5, "e": 1, "f": 1}, "longest",
     ["a", "b", "d", "c", "e", "f"]),
    ("aligned-with-canary", "tor", 2, {"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 9}, "longest",
     ["a", "b", "f", "e", "c", "d"]),
]


@pytest.mark.parametrize(("align", "canary", "known", "rule", "expected"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_start_order(align: str, canary: int, known: dict[str, float], rule: str,
                     expected: list[str]) -> None:
    assert start_order(_plan(align, canary), NODES, known, rule) == expected


def test_only_todo_nodes_are_ordered_and_unknown_rules_refused() -> None:
    plan = _plan()
    known = {"c": 5.0, "f": 1.0, "b": 99.0}  # b is not to be run: its time does not count
    assert start_order(plan, ["f", "a", "c"], known) == ["c", "a", "f"]  # a: the median, 3
    with pytest.raises(ValueError, match="unknown order"):
        start_order(plan, NODES, {}, "random")


def test_expected_durations_and_median() -> None:
    assert expected_durations(["a", "b"], {}) is None
    known = {"a": 1.0, "b": 3.0, "z": 100.0}
    assert expected_durations(["a", "b", "c"], known) == {"a": 1.0, "b": 3.0, "c": 2.0}
    assert median([3.0, 1.0, 2.0]) == 2.0 and median([4.0, 1.0]) == 2.5


def test_a_node_that_failed_expects_at_least_the_time_it_ran() -> None:
    known = {"a": 4.0, "b": 6.0}
    # c hung for 100 s last time: it starts first; d failed fast: the median (5) still holds for it
    assert expected_durations(["a", "b", "c", "d"], known, {"c": 100.0, "d": 1.0}) == {
        "a": 4.0, "b": 6.0, "c": 100.0, "d": 5.0}
    assert start_order(_plan(), NODES, known, floors={"e": 100.0})[0] == "e"
    # only failures recorded: they still order the rollout, the rest after them in plan order
    assert start_order(_plan(), NODES, {}, floors={"f": 30.0, "d": 60.0}) == ["d", "f", "a", "b", "c", "e"]


def test_chunks() -> None:
    assert chunks(list("abcde"), 2) == [("a", "b"), ("c", "d"), ("e",)]
    assert chunks([], 3) == []
    with pytest.raises(ValueError, match="at least 1"):
        chunks(["a"], 0)
