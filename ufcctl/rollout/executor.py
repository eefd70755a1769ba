"""Executing a rollout: long-lived Ansible processes, one per chunk of nodes, and a gate that admits nodes.

Why not one ansible-runner run per freed slot (the engine before): every run paid an
ansible-playbook start (~2.3 s of controller CPU, docs/reference/scale.md §1.2) and freed slots
waited up to 2 s to coalesce into a bigger run. Here one process per chunk (at most
`chunk_size` nodes, kind.py says why 2,000) serves its nodes for their whole rollout:

- The chunk's inventory lists its nodes in start order, the play runs `strategy: host_pinned`
  with forks = window capacity plus a few (`chunk_forks`), and its first task is the gate
  (playbooks/action_plugins/ufc_gate.py). host_pinned starts hosts in inventory order, so the
  hosts blocked in the gate are the next ones due; the engine answers go while slots are free.
  A node that ends frees its slot at once and a waiting host is admitted with no process start
  and no delay. Answers are go, skip (its preparation skipped it) or stop (after a budget stop,
  a canary failure or Ctrl-C), and any answer but go ends the host's play (`meta: end_host`).
- The next chunk's process starts while the previous one still has up to a window of nodes to
  admit, so it has started by the time they are admitted and no slot idles at the boundary.
- Nodes are prepared (cordon + drain, `NodeGuard`) by a small thread pool in start order, ahead
  of admission, while earlier nodes run: a node is admitted once its preparation is done and its
  host waits at the gate. Release (uncordon) runs on the pool when the node ends.
- Node ends come from the process's events: the marker task ok/changed means done, a failed or
  unreachable task means failed; a node in flight when its process ends never reached the marker
  and is failed with the reason. A node with no result `node_deadline` seconds after it started
  is failed as hung (its slot is freed; the process still holds the host until it ends).

Kill -9 safety: a node is committed `running` before its gate answers go, and `done`/`failed`
when its event arrives; resume turns `running` back into `pending` and never touches `done`.
When the engine dies, its gate socket closes, so the orphaned Ansible processes admit no node.
Ctrl-C or SIGTERM (engine/stops.py): no more go; waiting hosts are told to stop, every chunk's
processes are stopped (SIGTERM to the whole tree, SIGKILL after a grace period: engine/proctree.py)
and waited for, nodes in flight go back to pending, and only then is Stopped raised (the run is
recorded interrupted, the node lock released after). The engine takes the signal at a safe point:
while it runs on the main thread the handler only sets a flag the main loop acts on at its next
step. A KeyboardInterrupt raised wherever the main thread happened to be could fall between taking
a host off the waiting list and handing its go to the writer: that host would wait at the gate for
ever, and the rollout with it. A second signal kills the processes at once (SIGKILL), still
waited for and recorded; a third ends ufcctl at once, leaving what a kill -9 leaves.

The parts, one module each: `job.py` (what the executor is given), `admission.py` (the gate side:
waiting hosts, admission order and pacing, deadlines), `chunks.py` (the processes), `drainpool.py`
(preparation and release on a pool), `writer.py` (group commit), `nodeends.py` (a node's end: slot,
commit, announcement, release). This module is the main loop that ties them together, under one lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ufcctl.domain.rollout.states import FAILED, PENDING, SKIPPED
from ufcctl.domain.rollout.window import RolloutWindow
from ufcctl.engine import statedir, stops
from ufcctl.engine.gate import LABELS_AT_TARGET, STOP, GateRequest, GateServer
from ufcctl.engine.runner import RunResult
from ufcctl.rollout.admission import Admission
from ufcctl.rollout.chunks import Chunk, ChunkProcesses, leftover_reason, unstarted_reason
from ufcctl.rollout.drainpool import DrainPool
from ufcctl.rollout.job import SKIPPED_STEP, Note, RolloutJob, RolloutObserver, RunFn, call_notes
from ufcctl.rollout.kind import NodeGuard
from ufcctl.rollout.nodeends import NodeEnds
from ufcctl.rollout.store import NodeChange, StateStore
from ufcctl.rollout.writer import GroupWriter

INTERRUPTED = "interrupted (SIGINT/SIGTERM); `ufcctl resume` continues"


class _Execution(NodeEnds):
    """One rollout's run: the main loop deciding under `cond`, and the node ends every part reports."""

    def __init__(self, job: RolloutJob, store: StateStore, run_fn: RunFn,
                 observer: RolloutObserver | None, guard: NodeGuard | None,
                 clock: Callable[[], float]):
        self.job = job
        self.store = store
        self.observer = observer
        self.clock = clock
        self.window = RolloutWindow(job.plan, job.order, job.plan.capacity, job.budget,
                                    ahead=job.prepare_ahead if guard else job.plan.capacity,
                                    done=job.done_before, failed=job.failed_before)
        self.batch_of = job.plan.batch_of()
        self.cond = threading.Condition()
        self.ended: set[str] = set()
        self.cancelled = False
        self.ctrl_c = False  # set on SIGINT/SIGTERM (engine/stops.py); the main loop stops at its next step
        self.announced_stop = False
        self.store_error: Exception | None = None
        # steps the nodes' roles reported SKIPPED: task -> [nodes, one example "host: message"]
        self.skips: dict[str, list[Any]] = {}
        self.writer = GroupWriter(store, job.run_id, self._store_failed)
        self.processes = ChunkProcesses(job, run_fn, self, self._chunk_ended, lambda: self.cancelled)
        self.chunk_of = self.processes.chunk_of
        self.admission = Admission(job, self.window, self.chunk_of, self.writer, observer)
        self.drains = DrainPool(guard, job.hosts, job.prepare_workers, self._prepared,
                                job.order) if guard else None

    # -- main loop ----------------------------------------------------------------------------

    def execute(self) -> str | None:
        if self.observer:
            self.observer.rollout_started(self.job.run_id, self.job.plan, self.job.order)
        what = (f"rollout {self.job.run_id} stopped: its Ansible processes ended, nodes in flight are "
                f"pending again; `ufcctl resume {self.job.run_id}` continues")
        # stops.stopping() raises Stopped as it ends if a signal came: after _join, that is once
        # every chunk's processes have ended and the last node changes are committed
        with (GateServer(self._run_dir(), self._on_gate) as gate, stops.stopping(what),
              stops.listening(self._signalled)):
            self.processes.gate_env = gate.env()
            try:
                self._loop()
                if self.ctrl_c:
                    self._interrupt()
            except KeyboardInterrupt:  # one no handler of ours caught (not on the main thread...)
                self._interrupt()
                raise
            finally:
                self._join()
        self._record_skips()
        if self.cancelled:  # stopped, but by a KeyboardInterrupt outside stops.stopping()
            raise KeyboardInterrupt
        if self.store_error is not None:
            raise self.store_error
        return self.window.stop_reason

    def _run_dir(self) -> Path:
        """Where the gate socket lives: beside the Ansible runs' own directories (engine/runner.py),
        under the store's state directory."""
        directory = self.job.run_dir or statedir.ensure_private_dir(
            self.store.path.parent / "runs") / self.job.run_id
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return directory

    def skipped_step(self, host: str, task: str, message: str) -> None:
        with self.cond:
            entry = self.skips.setdefault(task, [0, f"{host}: {message}"])
            entry[0] += 1

    def _record_skips(self) -> None:
        """One run step per task some node reported SKIPPED (summary.steps `SKIPPED: <task>`), so a
        deploy can list what a production cluster would miss (app/deploy.py)."""
        for task, (count, example) in sorted(self.skips.items()):
            self.store.set_step(self.job.run_id, f"{SKIPPED_STEP}{task}", f"{count} node(s); e.g. {example}")

    def _signalled(self) -> None:
        """SIGINT/SIGTERM (engine/stops.py; in the signal handler, on the main thread, maybe inside the
        engine's own code holding `cond`): only the flag, and a notify that wakes the main loop if it
        waits on `cond` (reentrant)."""
        with self.cond:
            self.ctrl_c = True
            self.cond.notify_all()

    def _loop(self) -> None:
        while True:
            with self.cond:
                if self.ctrl_c or (self.window.complete and not self.processes.running):
                    return
                notes, progressed = self._step(self.clock())
                if not notes and not progressed:
                    self.cond.wait(self.admission.timeout(self.clock()))
            call_notes(notes)

    def _step(self, now: float) -> tuple[list[Note], bool]:
        """One pass of decisions (under the lock): what to do outside it, and whether anything moved."""
        notes: list[Note] = []
        if self.window.stop_reason is not None:
            notes += self._after_stop()
        claimed = self.window.claim()
        for host in claimed:
            if self.drains is None:
                self.window.prepared(host)
            else:
                self.drains.prepare(host)
        admitted = self.admission.admit_due(now)
        expired = self._expire(now)
        if self.window.stop_reason is None:
            self.processes.start_due()
        self.processes.settle(now, self.window.stop_reason is not None)
        return notes, bool(claimed or admitted or expired)

    def _after_stop(self) -> list[Note]:
        """No more go: waiting hosts are told to stop, claimed nodes go back to pending."""
        self.admission.stop_waiting(self.window.stop_reason)
        notes: list[Note] = []
        for host in self.window.unclaim():
            if self.drains is not None and host in self.drains.prepared:  # drained, never started
                notes.append(self.drains.release_note(host, True))
        return notes

    def _join(self) -> None:
        self.processes.join()
        if self.drains is not None:
            self.drains.shutdown()
        self.writer.close()  # the last changes committed, their notes made

    def _interrupt(self) -> None:
        with self.cond:
            self.cancelled = True
            self.window.stop(INTERRUPTED)
            notes = self._after_stop()
        call_notes(notes)

    # -- what the other parts report ----------------------------------------------------------

    def _on_gate(self, request: GateRequest) -> None:
        """A host's play waits at the gate (called on the gate server's thread)."""
        with self.cond:
            if self.admission.take(request):
                self.cond.notify_all()

    def _prepared(self, host: str, skip: str | None, error: Exception | None, drained: bool) -> None:
        """A node's preparation ended (on the drain pool): its gate then opens, or says skip. A node the
        guard found at target was not drained: it is never released, and its go says so."""
        assert self.drains is not None
        notes: list[Note] = []
        with self.cond:
            if not self.window.is_claimed(host):  # stopped meanwhile: nothing ran on it
                if error is None and skip is None and drained:
                    notes.append(self.drains.release_note(host, True))
            elif error is not None:  # released as failed: whatever the drain did stays (cordoned)
                self.drains.prepared.add(host)
                notes += self._end_unstarted(host, FAILED, f"not started: preparing the node failed: {error}")
            elif skip is not None:
                notes += self._end_unstarted(host, SKIPPED, skip)
            else:
                if drained:
                    self.drains.prepared.add(host)
                self.admission.facts[host] = {LABELS_AT_TARGET: not drained}
                self.window.prepared(host)
            self.cond.notify_all()
        call_notes(notes)

    def _expire(self, now: float) -> bool:
        expired = False
        for host in self.admission.overdue(now):
            if host in self.admission.started and host not in self.ended:
                self._end(host, FAILED, f"no result {self.job.node_deadline:g} s after it started: "
                          "failed as hung", None)
                expired = True
        return expired

    def _store_failed(self, err: Exception, admitted: list[GateRequest]) -> None:
        """A group commit failed (on the writer): stop; nodes whose `running` is not on disk stay pending."""
        with self.cond:
            self.store_error = self.store_error or err
            self.window.stop(f"the state store could not be written: {err}")
            for request in admitted:
                request.answer(STOP, "the state store could not be written")
                host = request.host
                if host in self.admission.started and host not in self.ended:
                    self.ended.add(host)
                    self.chunk_of[host].in_flight -= 1
                    self.window.abandon(host)
            self.cond.notify_all()

    def _chunk_ended(self, chunk: Chunk, result: RunResult | None, error: Exception | None) -> None:
        """A chunk's process ended (on its thread): its nodes still open end with the reason."""
        notes: list[Note] = []
        with self.cond:
            chunk.ended = True
            for host in chunk.hosts:
                notes += self._leftover(chunk, host, result, error)
            self.cond.notify_all()
        call_notes(notes)

    def _leftover(self, chunk: Chunk, host: str, result: RunResult | None,
                  error: Exception | None) -> list[Note]:
        """A node of a process that ended: still in flight, or never admitted."""
        if host in self.ended:
            return []
        self.admission.drop(host, "its Ansible process ended")
        self.window.left(host)
        if host in self.admission.started:
            if self.cancelled:
                self._abandon(chunk, host)
                return []
            why = f"ansible run {chunk.run_id} could not run: {error}" if result is None else \
                leftover_reason(result, host, chunk.run_id)
            return self._end(host, FAILED, why, None)
        if self.cancelled or self.window.stop_reason is not None:
            return []  # stays pending
        if result is None:
            why = f"not started: ansible run {chunk.run_id} could not run: {error}"
        else:
            why = unstarted_reason(result, host, chunk.run_id)
        return self._end_unstarted(host, FAILED, why[:400])

    def _abandon(self, chunk: Chunk, host: str) -> None:
        self.ended.add(host)
        chunk.in_flight -= 1
        self.writer.submit([NodeChange(host, PENDING, time.time())], [])
        self.window.abandon(host)

    # -- ends ---------------------------------------------------------------------------------


def execute_rollout(
    job: RolloutJob,
    store: StateStore,
    run_fn: RunFn,
    *,
    observer: RolloutObserver | None = None,
    guard: NodeGuard | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> str | None:
    """Run the job's nodes through the gate and the window; returns the stop reason, or None."""
    return _Execution(job, store, run_fn, observer, guard, clock).execute()
