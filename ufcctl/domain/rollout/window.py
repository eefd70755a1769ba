"""The sliding window: which nodes start next, with no batch barrier, a canary gate and a failure budget.

Pure bookkeeping, no clock and no threads: the caller passes `now` and reports each node's end.
Batches are the plan's unit (canary gate, failure-domain alignment, reporting); the window's unit
is the node. Up to `capacity` nodes are in flight; a node that finishes frees its slot at once, so
a slow or hung node holds one slot, never its whole batch. Nodes start in groups ("runs", one
ansible-runner invocation each, at most `run_size` nodes) because every run pays Ansible's start-up
cost; free slots wait up to `coalesce_seconds` for a full run before a smaller run fills them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from ufcctl.domain.rollout.budget import FailureBudget
from ufcctl.domain.rollout.plan import RolloutPlan
from ufcctl.domain.rollout.states import DONE, FAILED, SKIPPED


@dataclass(frozen=True)
class WindowPolicy:
    capacity: int  # nodes in flight at most
    run_size: int  # nodes per run at most
    coalesce_seconds: float = 2.0

    def __post_init__(self) -> None:
        if self.capacity < 1 or self.run_size < 1:
            raise ValueError(f"capacity {self.capacity} and run size {self.run_size} must be at least 1")


class RolloutWindow:
    """Tracks queued, in-flight and finished nodes of one rollout and decides what starts next."""

    def __init__(
        self,
        plan: RolloutPlan,
        todo: Iterable[str],
        policy: WindowPolicy,
        budget: FailureBudget,
        *,
        done: int = 0,
        failed: int = 0,
    ):
        wanted = set(todo)
        canary = set(plan.canary_hosts())
        unknown = wanted - set(plan.hosts())
        if unknown:
            raise ValueError(f"nodes not in the plan: {', '.join(sorted(unknown)[:10])}")
        self.policy = policy
        self.budget = budget
        self._canary = canary
        self._canary_queue = deque(h for h in plan.hosts() if h in wanted and h in canary)
        self._queue = deque(h for h in plan.hosts() if h in wanted and h not in canary)
        self._in_flight: set[str] = set()
        self._canary_failed: list[str] = []
        self._free_since: float | None = None
        # counts include earlier attempts of the same rollout (resume), so the budget spans them
        self.done = done
        self.failed = failed
        self.skipped = 0
        self.stop_reason: str | None = None

    @property
    def in_flight(self) -> frozenset[str]:
        return frozenset(self._in_flight)

    @property
    def queued(self) -> int:
        return len(self._canary_queue) + len(self._queue)

    @property
    def complete(self) -> bool:
        """Nothing in flight and nothing more will start."""
        return not self._in_flight and (self.stop_reason is not None or self.queued == 0)

    def remaining(self) -> list[str]:
        """Nodes that have not started (all of them stay pending after a stop)."""
        return list(self._canary_queue) + list(self._queue)

    def _free(self) -> int:
        return self.policy.capacity - len(self._in_flight)

    def _canary_gate_closed(self) -> bool:
        return not self._canary_queue and any(h in self._canary for h in self._in_flight)

    def next_run(self, now: float) -> tuple[str, ...]:
        """Nodes to start now as one run, or () when nothing should start yet."""
        free = self._free()
        if self.stop_reason is not None or free <= 0 or self._canary_gate_closed():
            return ()
        queue = self._canary_queue or self._queue
        if not queue:
            return ()
        want = min(self.policy.run_size, len(queue))
        waited = self._free_since is not None and now - self._free_since >= self.policy.coalesce_seconds
        if free < want and not waited:
            if self._free_since is None:
                self._free_since = now
            return ()
        hosts = tuple(queue.popleft() for _ in range(min(free, want)))
        self._in_flight.update(hosts)
        self._free_since = now if self._free() > 0 else None
        return hosts

    def wake_at(self) -> float | None:
        """When free slots stop waiting for a full run (call next_run then), if they are waiting."""
        if self.stop_reason is not None or not self.queued or self._free_since is None:
            return None
        return self._free_since + self.policy.coalesce_seconds

    def finished(self, host: str, state: str, now: float) -> None:
        """A node in flight ended as done, failed or skipped."""
        if host not in self._in_flight:
            raise ValueError(f"{host} is not in flight")
        if state not in (DONE, FAILED, SKIPPED):
            raise ValueError(f"{host}: {state!r} is not a finished state")
        self._in_flight.discard(host)
        if self._free_since is None:
            self._free_since = now
        if state == DONE:
            self.done += 1
        elif state == SKIPPED:
            self.skipped += 1
        else:
            self.failed += 1
            if host in self._canary:
                self._canary_failed.append(host)
                self.stop(f"canary node {host} failed; no further node was started")
            elif self.budget.exceeded(self.failed, self.done + self.failed):
                self.stop(self.budget.describe(self.failed, self.done + self.failed))

    def abandon(self, host: str) -> None:
        """A node in flight whose outcome is unknown (its run was cancelled): back to the queue's head."""
        if host not in self._in_flight:
            raise ValueError(f"{host} is not in flight")
        self._in_flight.discard(host)
        (self._canary_queue if host in self._canary else self._queue).appendleft(host)

    def stop(self, reason: str) -> None:
        """Start no new work; in-flight nodes still finish. The first reason is kept."""
        if self.stop_reason is None:
            self.stop_reason = reason
