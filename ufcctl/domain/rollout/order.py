"""The order nodes start in: longest expected first, within the canary and topology constraints.

Why not first-in-first-out: with C slots and one slow node, a FIFO schedule that happens to start
the slow node last finishes a whole slow-node time after everything else, while starting it first
hides it behind the others. Starting jobs in decreasing length (Graham's LPT rule, "Bounds on
multiprocessing timing anomalies", SIAM J. Appl. Math. 17(2), 1969) finishes within
4/3 - 1/(3C) of the best possible schedule. Expected lengths are the nodes' durations measured
in earlier runs of the same kind (the state store keeps them).

The rules, in this order:
1. Canary nodes first, in plan order, unchanged: they gate everything else.
2. Nodes with no recorded duration are expected to take the median of the known ones; when no
   node to order has one, the plan order is kept (nothing better is known). A node whose newest
   record is a failure is expected to take at least as long as it ran then: a node that hung
   until its deadline last time starts among the first, where a repeat costs the least (its
   slot is busy while the others still run), not at the end, where it would add a whole
   deadline to the rollout. With a failure budget its repeat failure then counts early, against
   at least one batch (the budget's floor): `--max-fail` below 100 / batch stops the rollout there.
3. Without alignment (`--by none`) every non-canary node is ordered by expected duration,
   longest first, ties in plan order. Batches then only label nodes for the report.
4. With alignment (`--by tor` / `--by superpod`) each batch's nodes stay together (a failure
   domain is taken out of service as one block, as before); batches go longest expected node
   first, and the nodes inside a batch longest first. Ties keep the plan order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ufcctl.domain.rollout.plan import RolloutPlan

LONGEST = "longest"  # longest expected first (the default)
PLAN = "plan"  # the plan's order (inventory order, batches cut along domains): first in, first out
ORDERS = (LONGEST, PLAN)


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def expected_durations(hosts: Sequence[str], known: Mapping[str, float],
                       floors: Mapping[str, float] | None = None) -> dict[str, float] | None:
    """Each host's expected seconds: its recorded one, else the median of the recorded ones, raised
    to its floor (how long it ran before it failed, when its newest record is a failure).

    None when no host has a recorded duration or a floor.
    """
    floors = floors or {}
    seen = [known[h] for h in hosts if h in known]
    if not seen and not any(h in floors for h in hosts):
        return None
    fill = median(seen) if seen else 0.0
    return {h: known[h] if h in known else max(fill, floors.get(h, 0.0)) for h in hosts}


def start_order(plan: RolloutPlan, todo: Sequence[str], known: Mapping[str, float],
                rule: str = LONGEST, floors: Mapping[str, float] | None = None) -> list[str]:
    """The nodes of `todo` in the order they should start (see the module docstring)."""
    if rule not in ORDERS:
        raise ValueError(f"unknown order {rule!r}; use one of: {', '.join(ORDERS)}")
    wanted = set(todo)
    canary = set(plan.canary_hosts())
    first = [h for h in plan.hosts() if h in wanted and h in canary]
    batches = [[h for h in b.hosts if h in wanted and h not in canary] for b in plan.batches]
    batches = [b for b in batches if b]
    rest = [h for b in batches for h in b]
    expected = expected_durations(rest, known, floors) if rule == LONGEST else None
    if expected is None:
        return first + rest
    position = {h: i for i, h in enumerate(rest)}

    def longest_first(hosts: Sequence[str]) -> list[str]:
        return sorted(hosts, key=lambda h: (-expected[h], position[h]))

    if plan.align == "none":
        return first + longest_first(rest)
    inner = sorted(((longest_first(b), i) for i, b in enumerate(batches)),
                   key=lambda pair: (-expected[pair[0][0]], pair[1]))
    return first + [h for b, _ in inner for h in b]


def chunks(order: Sequence[str], size: int) -> list[tuple[str, ...]]:
    """Consecutive groups of at most `size` nodes: one long-lived Ansible process each."""
    if size < 1:
        raise ValueError(f"chunk size {size} must be at least 1")
    return [tuple(order[i:i + size]) for i in range(0, len(order), size)]
