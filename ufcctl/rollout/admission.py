"""The executor's gate side: hosts waiting at the gate, their admission, and per-node deadlines.

A freed slot goes to the waiting host earliest in start order, never to a host that merely asked
first; and a slot never idles for a host that has not asked yet. host_pinned starts hosts in
inventory order, but their forked workers reach the gate in whatever order they get there, so
among the hosts due next the order holds only among those already waiting. Admissions are paced
(`RolloutJob.rate`). A node is committed `running` before its gate answers go (GroupWriter), so
kill -9 and resume stay exact. Everything here runs under the executor's lock.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Mapping

from ufcctl.domain.rollout.pacing import Pacer
from ufcctl.domain.rollout.states import RUNNING
from ufcctl.domain.rollout.window import RolloutWindow
from ufcctl.engine.gate import SKIP, STOP, GateRequest
from ufcctl.rollout.chunks import Chunk
from ufcctl.rollout.job import Note, RolloutJob, RolloutObserver
from ufcctl.rollout.store import NodeChange
from ufcctl.rollout.writer import GroupWriter


class Admission:
    """Who waits at the gate, who was admitted when, and what a late gate request is answered."""

    def __init__(self, job: RolloutJob, window: RolloutWindow, chunk_of: Mapping[str, Chunk],
                 writer: GroupWriter, observer: RolloutObserver | None):
        self.job = job
        self.window = window
        self.chunk_of = chunk_of
        self.writer = writer
        self.observer = observer
        self.batch_of = job.plan.batch_of()
        self.pacer = Pacer(job.rate)
        self.waiting: dict[str, GateRequest] = {}
        self.answers: dict[str, tuple[str, str | None]] = {}  # ended before admission: the gate's answer
        # what a host's go tells its play besides go (engine/gate.py), e.g. that it was not drained
        self.facts: dict[str, dict[str, object]] = {}
        self.started: dict[str, float] = {}
        self.deadlines: list[tuple[float, str]] = []

    def take(self, request: GateRequest) -> bool:
        """A host's play asks at the gate: answered at once, or (True) it waits for a slot."""
        host = request.host
        if host not in self.chunk_of:
            request.answer(STOP, f"{host} is not a node of rollout {self.job.run_id}")
        elif host in self.answers:
            request.answer(*self.answers[host])
        elif host in self.started:
            request.answer(STOP, f"{host} was already admitted in rollout {self.job.run_id}")
        elif self.window.stop_reason is not None:
            request.answer(STOP, self.window.stop_reason)
        else:
            self.waiting[host] = request
            self.window.arrived(host)
            return True
        return False

    def admit_due(self, now: float) -> list[str]:
        """Admit what the window and the pacing allow now."""
        admitted = self.window.admissions(self.pacer.allowance(now))
        self.pacer.take(len(admitted), now)
        for host in admitted:
            self._admit(host, now)
        return admitted

    def _admit(self, host: str, now: float) -> None:
        chunk = self.chunk_of[host]
        self.started[host] = now
        chunk.in_flight += 1
        if self.job.node_deadline is not None:
            heapq.heappush(self.deadlines, (now + self.job.node_deadline, host))
        notes: list[Note] = []
        if self.observer:
            observer, batch = self.observer, self.batch_of[host]
            notes.append(lambda: observer.node_started(host, batch))
        # the gate opens once `running` is committed: a crash from then on leaves the node `running`
        change = NodeChange(host, RUNNING, time.time(), ansible_run=chunk.run_id)
        request = self.waiting.pop(host)
        request.facts = self.facts.pop(host, {})
        self.writer.submit([change], notes, go=request)

    def overdue(self, now: float) -> list[str]:
        """Nodes whose deadline has passed (each reported once; ended ones among them too)."""
        hosts = []
        while self.deadlines and self.deadlines[0][0] <= now:
            hosts.append(heapq.heappop(self.deadlines)[1])
        return hosts

    def stop_waiting(self, reason: str | None) -> None:
        """No more go: every waiting host is told to stop."""
        for request in self.waiting.values():
            request.answer(STOP, reason)
        self.waiting.clear()

    def skip(self, host: str, reason: str) -> None:
        """A node ended before admission: its gate says skip, now or when it asks."""
        self.answers[host] = (SKIP, reason)
        request = self.waiting.pop(host, None)
        if request is not None:
            request.answer(SKIP, reason)

    def drop(self, host: str, reason: str) -> None:
        """A host's process ended: a request of it still waiting is told to stop."""
        request = self.waiting.pop(host, None)
        if request is not None:
            request.answer(STOP, reason)

    def timeout(self, now: float) -> float:
        """How long the main loop may wait for news: held back by pacing or a deadline due."""
        wait = 1.0
        if self.window.admissible and self.window.in_flight_count < self.window.capacity:
            wait = min(wait, max(0.01, self.pacer.wait(now)))  # held back by pacing only
        if self.deadlines:
            wait = min(wait, max(0.01, self.deadlines[0][0] - now))
        return wait
