"""A rollout's node ends: the slot freed at once, the end committed, then announced and released.

The executor's (executor.py `_Execution`) part that every other part reports into: a process's events
(`finish`), a deadline, a failed preparation or a process that ended before its nodes were admitted
(`_end_unstarted`). Called under the execution's lock `cond`; notes run after the commit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ufcctl.domain.rollout.states import DONE, RUNNING, SKIPPED
from ufcctl.domain.rollout.window import RolloutWindow
from ufcctl.rollout.admission import Admission
from ufcctl.rollout.chunks import Chunk
from ufcctl.rollout.drainpool import DrainPool
from ufcctl.rollout.job import Note, RolloutObserver, call_notes
from ufcctl.rollout.store import NodeChange
from ufcctl.rollout.writer import GroupWriter


class NodeEnds:
    """Node ends over the execution's state (set by `_Execution.__init__`)."""

    cond: threading.Condition
    ended: set[str]
    admission: Admission
    chunk_of: dict[str, Chunk]
    window: RolloutWindow
    clock: Callable[[], float]
    drains: DrainPool | None
    writer: GroupWriter
    observer: RolloutObserver | None
    batch_of: dict[str, int]
    announced_stop: bool

    def finish(self, host: str, state: str, reason: str | None, changed: bool | None = None) -> None:
        """A node in flight ended (from a process's events). The first report wins."""
        with self.cond:
            notes = self._end(host, state, reason, changed)
            self.cond.notify_all()
        call_notes(notes)

    def _end(self, host: str, state: str, reason: str | None, changed: bool | None) -> list[Note]:
        """Free the slot now; commit, then announce and release (after the commit). Nodes in flight only."""
        if host in self.ended or host not in self.admission.started:
            return []
        self.ended.add(host)
        chunk = self.chunk_of[host]
        chunk.in_flight -= 1
        chunk.open -= 1
        self.window.finished(host, state)
        notes = self._announce(host, state, reason, self.clock() - self.admission.started[host])
        if self.drains is not None and state != SKIPPED and host in self.drains.prepared:  # not if undrained
            notes.append(self.drains.release_note(host, state == DONE))
        self.writer.submit([NodeChange(host, state, time.time(), reason=reason, changed=changed)], notes)
        return []

    def _end_unstarted(self, host: str, state: str, reason: str) -> list[Note]:
        """A node ended before admission: skipped or failed by its preparation, or its process ended."""
        self.ended.add(host)
        self.chunk_of[host].open -= 1
        now = time.time()
        changes = [NodeChange(host, state, now, reason=reason)]
        if state != SKIPPED:  # recorded as an attempt that failed at once
            changes.insert(0, NodeChange(host, RUNNING, now, ansible_run=self.chunk_of[host].run_id))
        self.window.finished(host, state)
        self.admission.skip(host, reason)
        notes = self._announce(host, state, reason, None)
        if self.drains is not None and host in self.drains.prepared:  # a failed node stays cordoned
            notes.append(self.drains.release_note(host, False))
        self.writer.submit(changes, notes)
        return []

    def _announce(self, host: str, state: str, reason: str | None, seconds: float | None) -> list[Note]:
        stop = self.window.stop_reason if not self.announced_stop else None
        self.announced_stop = self.announced_stop or stop is not None
        observer = self.observer
        if observer is None:
            return []
        batch = self.batch_of[host]
        notes: list[Note] = [lambda: observer.node_finished(host, batch, state, reason, seconds)]
        if stop:
            notes.append(lambda: observer.stopped(stop))
        return notes
