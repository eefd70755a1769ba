"""The sliding window: which node is admitted next, with no batch barrier, a canary gate and a budget.

Pure bookkeeping, no clock and no threads: the caller reports what happened and asks what to do.
Batches are the plan's unit (canary gate, failure-domain alignment, reporting); the window's unit
is the node. Up to `capacity` nodes are in flight; a node that ends frees its slot at once, so a
slow or hung node holds one slot, never its whole batch.

A node goes queued -> claimed -> in flight -> ended:
- claimed: taken in start order to be prepared (cordon + drain) ahead of its admission. Claims run
  `ahead` nodes past the free slots, so drains overlap the nodes still running; nothing is claimed
  after a stop, and no other node while canary nodes are unresolved.
- in flight: admitted through the gate, which needs the node claimed, prepared, and waiting at the
  gate (its Ansible process has reached it): `admissions()` picks such nodes in start order while
  slots are free.
- ended: done, failed or skipped; failures count against the budget, and a failed canary node or
  an exceeded budget stops admissions (nodes in flight still finish).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Sequence

from ufcctl.domain.rollout.budget import FailureBudget
from ufcctl.domain.rollout.plan import RolloutPlan
from ufcctl.domain.rollout.states import DONE, FAILED, SKIPPED


class RolloutWindow:
    """Tracks one rollout's queued, claimed, in-flight and ended nodes and decides admissions."""

    def __init__(
        self,
        plan: RolloutPlan,
        order: Sequence[str],
        capacity: int,
        budget: FailureBudget,
        *,
        ahead: int = 0,
        done: int = 0,
        failed: int = 0,
    ):
        if capacity < 1:
            raise ValueError(f"capacity {capacity} must be at least 1")
        if ahead < 0:
            raise ValueError(f"ahead {ahead} must not be negative")
        unknown = set(order) - set(plan.hosts())
        if unknown:
            raise ValueError(f"nodes not in the plan: {', '.join(sorted(unknown)[:10])}")
        if len(set(order)) != len(order):
            raise ValueError("a node is listed twice in the start order")
        self.capacity = capacity
        self.ahead = ahead
        self.budget = budget
        self._canary = frozenset(plan.canary_hosts())
        self._queue = deque(order)
        self._rank = {h: i for i, h in enumerate(order)}
        self._claimed: dict[str, None] = {}  # insertion-ordered set
        self._ready: set[str] = set()
        self._waiting: set[str] = set()
        self._admissible: set[str] = set()  # claimed, ready and waiting
        self._in_flight: set[str] = set()
        self._canary_open = sum(1 for h in order if h in self._canary)  # canary nodes not ended
        # counts include earlier attempts of the same rollout (resume), so the budget spans them
        self.done = done
        self.failed = failed
        self.skipped = 0
        self.stop_reason: str | None = None

    # -- queries --------------------------------------------------------------------------------

    @property
    def in_flight(self) -> frozenset[str]:
        return frozenset(self._in_flight)

    @property
    def claimed(self) -> tuple[str, ...]:
        return tuple(self._claimed)

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def complete(self) -> bool:
        """Nothing in flight or claimed, and nothing more will start."""
        return (not self._in_flight and not self._claimed
                and (self.stop_reason is not None or not self._queue))

    def remaining(self) -> list[str]:
        """Nodes not admitted and not ended (all of them stay pending after a stop)."""
        return list(self._claimed) + list(self._queue)

    def is_claimed(self, host: str) -> bool:
        return host in self._claimed

    def unstarted(self, hosts: Iterable[str]) -> list[str]:
        """Those of `hosts` that are neither in flight nor ended (queued or claimed)."""
        left = set(self._queue) | set(self._claimed)
        return [h for h in hosts if h in left]

    def _canary_blocks(self, host: str) -> bool:
        return self._canary_open > 0 and host not in self._canary

    # -- decisions ------------------------------------------------------------------------------

    def claim(self) -> list[str]:
        """Nodes to prepare now, in start order: up to the free slots plus `ahead` claimed nodes."""
        if self.stop_reason is not None:
            return []
        room = self.capacity - len(self._in_flight) + self.ahead - len(self._claimed)
        taken = []
        while room > 0 and self._queue and not self._canary_blocks(self._queue[0]):
            host = self._queue.popleft()
            self._claimed[host] = None
            taken.append(host)
            room -= 1
        return taken

    def prepared(self, host: str) -> None:
        """A claimed node is prepared (drained, or nothing to prepare) and may be admitted."""
        if host not in self._claimed:
            raise ValueError(f"{host} is not claimed")
        self._ready.add(host)
        if host in self._waiting:
            self._admissible.add(host)

    def arrived(self, host: str) -> None:
        """The node's Ansible process waits at the gate for it."""
        self._waiting.add(host)
        if host in self._ready:
            self._admissible.add(host)

    def left(self, host: str) -> None:
        """The node's Ansible process no longer waits at the gate for it (the process ended)."""
        self._waiting.discard(host)
        self._admissible.discard(host)

    @property
    def in_flight_count(self) -> int:
        return len(self._in_flight)

    @property
    def admissible(self) -> int:
        """Nodes claimed, prepared and waiting at the gate (admitted as soon as slots and pacing allow)."""
        return len(self._admissible)

    def admissions(self, limit: int | None = None) -> list[str]:
        """Nodes admitted now (claimed, prepared, at the gate), earliest in start order first; at most
        `limit` of them (the pacer's allowance) when given."""
        if self.stop_reason is not None:
            return []
        free = self.capacity - len(self._in_flight)
        if limit is not None:
            free = min(free, limit)
        if free <= 0:
            return []
        admitted = sorted(self._admissible, key=self._rank.__getitem__)[:free]
        for host in admitted:
            self._forget(host)
            del self._claimed[host]
            self._in_flight.add(host)
        return admitted

    def _forget(self, host: str) -> None:
        self._ready.discard(host)
        self._waiting.discard(host)
        self._admissible.discard(host)

    # -- ends -------------------------------------------------------------------------------

    def finished(self, host: str, state: str) -> None:
        """A node ended as done, failed or skipped: in flight, or before admission (claimed or queued:
        its preparation skipped or failed it, or its Ansible process ended before it got that far)."""
        if state not in (DONE, FAILED, SKIPPED):
            raise ValueError(f"{host}: {state!r} is not a finished state")
        if host in self._in_flight:
            self._in_flight.discard(host)
        elif host in self._claimed:
            del self._claimed[host]
        elif host in self._queue:
            self._queue.remove(host)
        else:
            raise ValueError(f"{host} is not in flight, claimed or queued")
        self._forget(host)
        if host in self._canary:
            self._canary_open -= 1
        if state == DONE:
            self.done += 1
        elif state == SKIPPED:
            self.skipped += 1
        else:
            self.failed += 1
            if host in self._canary:
                self.stop(f"canary node {host} failed; no further node was started")
            elif self.budget.exceeded(self.failed, self.done + self.failed):
                self.stop(self.budget.describe(self.failed, self.done + self.failed))

    def abandon(self, host: str) -> None:
        """A node in flight whose outcome is unknown (its process was cancelled): back to the queue."""
        if host not in self._in_flight:
            raise ValueError(f"{host} is not in flight")
        self._in_flight.discard(host)
        self._forget(host)
        self._requeue([host])

    def unclaim(self) -> list[str]:
        """After a stop: claimed nodes go back to the queue (they stay pending); returns them."""
        hosts = list(self._claimed)
        self._claimed.clear()
        for host in hosts:
            self._forget(host)
        self._requeue(hosts)
        return hosts

    def _requeue(self, hosts: list[str]) -> None:
        rank = self._rank.__getitem__
        self._queue = deque(heapq.merge(sorted(hosts, key=rank), self._queue, key=rank))

    def stop(self, reason: str) -> None:
        """Admit no new node; nodes in flight still finish. The first reason is kept."""
        if self.stop_reason is None:
            self.stop_reason = reason
