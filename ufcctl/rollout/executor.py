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

Admission order: a freed slot goes to the waiting host earliest in start order, never to a host
that merely asked first; and a slot never idles for a host that has not asked yet. host_pinned
starts hosts in inventory order, but their forked workers reach the gate in whatever order they
get there, so among the hosts due next the order holds only among those already waiting.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ufcctl.domain.inventory.model import Host
from ufcctl.domain.rollout.budget import FailureBudget
from ufcctl.domain.rollout.order import chunks
from ufcctl.domain.rollout.pacing import Pacer
from ufcctl.domain.rollout.plan import RolloutPlan
from ufcctl.domain.rollout.states import DONE, FAILED, PENDING, RUNNING, SKIPPED
from ufcctl.domain.rollout.window import RolloutWindow
from ufcctl.engine import statedir, stops
from ufcctl.engine.gate import GO, SKIP, STOP, GateRequest, GateServer
from ufcctl.engine.runner import RunOptions, RunResult
from ufcctl.rollout.kind import DEFAULT_CHUNK, NodeGuard
from ufcctl.rollout.store import NodeChange, StateStore

log = logging.getLogger(__name__)

RunFn = Callable[..., RunResult]  # engine.runner.run_playbook's signature

# Threads preparing (draining) nodes, and nodes prepared beyond the free slots. kubectl drain
# mostly waits for pods to leave, so 8 in parallel keep up with a window of hundreds of nodes
# whose upgrades take minutes, and 8 extra cordoned nodes are a small price for never waiting on a drain.
PREPARE_WORKERS = 8
PREPARE_AHEAD = 8
# A chunk whose every node has ended but whose process still runs after this long holds only
# hosts failed as hung: it is cancelled.
SETTLE_SECONDS = 30.0


def chunk_forks(capacity: int) -> int:
    """Forks per process: the window's capacity plus a few hosts waiting at the gate to refill slots."""
    return capacity + min(32, max(2, capacity // 10))


class RolloutObserver(Protocol):
    """Live progress of a rollout (called from worker threads; implementations must be thread-safe)."""

    def rollout_started(self, run_id: str, plan: RolloutPlan, todo: Sequence[str]) -> None: ...

    def node_started(self, host: str, batch: int) -> None: ...

    def node_finished(self, host: str, batch: int, state: str, reason: str | None,
                      seconds: float | None) -> None: ...

    def stopped(self, reason: str) -> None: ...


@dataclass(frozen=True)
class RolloutJob:
    run_id: str
    playbook: Path
    plan: RolloutPlan
    hosts: Mapping[str, Host]
    order: tuple[str, ...]  # the nodes to run, in start order
    options: RunOptions
    marker_task: str  # the kind's last task: its ok/changed event means the node is done
    budget: FailureBudget
    chunk_size: int = DEFAULT_CHUNK
    node_deadline: float | None = None
    rate: float | None = None  # admissions per second at most (join pacing; None: no ceiling)
    prepare_workers: int = PREPARE_WORKERS
    prepare_ahead: int = PREPARE_AHEAD
    settle_seconds: float = SETTLE_SECONDS
    done_before: int = 0  # earlier attempts of the same run (resume), for the failure budget
    failed_before: int = 0
    run_dir: Path | None = None  # holds the gate socket; default <state dir>/runs/<run_id>


@dataclass
class _Chunk:
    index: int
    run_id: str  # the Ansible run's id (run directory, the nodes' ansible_run)
    hosts: tuple[str, ...]
    open: int = 0  # nodes not ended
    in_flight: int = 0
    started: bool = False
    ended: bool = False
    cancel: bool = False
    settled_at: float | None = None
    thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def unstarted(self) -> int:
        return self.open - self.in_flight


class _NodeEvents:
    """A RunObserver for one Ansible process that turns marker and failure events into node ends."""

    def __init__(self, execution: _Execution, marker: str):
        self.execution = execution
        self.marker = marker

    def run_started(self, run_id: str, hosts: list[str]) -> None:
        pass

    def task_started(self, run_id: str, task: str) -> None:
        pass

    def host_task_done(self, run_id: str, host: str, task: str, status: str, message: str | None) -> None:
        if status in ("ok", "changed") and message:  # a step the role reported SKIPPED (engine/runner.py)
            self.execution.skipped_step(host, task, message)
        if task == self.marker and status in ("ok", "changed"):
            self.execution.finish(host, DONE, None, changed=status == "changed")
        elif status in ("failed", "unreachable"):
            first = (message or "").strip().splitlines()[0][:300] if message else "no message"
            self.execution.finish(host, FAILED, f"{status} at '{task}': {first}")

    def run_finished(self, result: RunResult) -> None:
        pass


Note = Callable[[], None]  # an observer call or a release, made outside the lock
SKIPPED_STEP = "SKIPPED: "  # prefix of the run steps that name a task some node reported SKIPPED


@dataclass
class _Entry:
    changes: Sequence[NodeChange]
    notes: list[Note]
    go: GateRequest | None  # the gate to open once the changes are committed


class _Writer:
    """Group commit: node changes queue up and one thread commits whatever has queued, in one
    transaction (one fsync with synchronous=FULL, measured at ~5 ms on this project's 2-core box,
    where one commit per change capped the engine near 100 nodes per second). What depends on a
    change runs after its commit: the gate's go (a node is `running` on disk before it starts)
    and the observer's calls."""

    def __init__(self, store: StateStore, run_id: str,
                 on_error: Callable[[Exception, list[GateRequest]], None]):
        self.store = store
        self.run_id = run_id
        self.on_error = on_error
        self.cond = threading.Condition()
        self.queue: list[_Entry] = []
        self.closing = False
        self.thread = threading.Thread(target=self._run, name="rollout-store", daemon=True)
        self.thread.start()

    def submit(self, changes: Sequence[NodeChange], notes: list[Note], go: GateRequest | None = None) -> None:
        with self.cond:
            self.queue.append(_Entry(changes, notes, go))
            self.cond.notify()

    def close(self) -> None:
        """Commit what is queued, make its notes, stop."""
        with self.cond:
            self.closing = True
            self.cond.notify()
        self.thread.join()

    def _run(self) -> None:
        while True:
            with self.cond:
                self.cond.wait_for(lambda: bool(self.queue) or self.closing)
                if not self.queue:
                    return
                batch, self.queue = self.queue, []
            try:
                refused = self.store.apply(self.run_id, [c for entry in batch for c in entry.changes])
            except Exception as err:  # a full disk, a broken file: nothing of the batch is committed
                log.exception("state store write failed")
                self.on_error(err, [entry.go for entry in batch if entry.go is not None])
                continue
            for problem in refused:
                log.error("state store refused a change: %s", problem)
            for entry in batch:
                if entry.go is not None:
                    entry.go.answer(GO)
                _call(entry.notes)


class _Execution:
    def __init__(self, job: RolloutJob, store: StateStore, run_fn: RunFn,
                 observer: RolloutObserver | None, guard: NodeGuard | None,
                 clock: Callable[[], float]):
        self.job = job
        self.store = store
        self.run_fn = run_fn
        self.observer = observer
        self.guard = guard
        self.clock = clock
        capacity = job.plan.capacity
        self.window = RolloutWindow(job.plan, job.order, capacity, job.budget,
                                    ahead=job.prepare_ahead if guard else capacity,
                                    done=job.done_before, failed=job.failed_before)
        self.pacer = Pacer(job.rate)
        self.batch_of = job.plan.batch_of()
        self.chunks = [_Chunk(i, f"{job.run_id}-c{i + 1:03d}", hosts, open=len(hosts))
                       for i, hosts in enumerate(chunks(job.order, job.chunk_size))]
        self.chunk_of = {h: c for c in self.chunks for h in c.hosts}
        self.cond = threading.Condition()
        self.waiting: dict[str, GateRequest] = {}
        self.answers: dict[str, tuple[str, str | None]] = {}  # ended before admission: the gate's answer
        self.started: dict[str, float] = {}
        self.ended: set[str] = set()
        self.prepared: set[str] = set()  # prepared by the guard and not yet released
        self.deadlines: list[tuple[float, str]] = []
        self.pool = ThreadPoolExecutor(job.prepare_workers, "rollout-prepare") if guard else None
        self.gate_env: dict[str, str] = {}
        self.cancelled = False
        self.ctrl_c = False  # set on SIGINT/SIGTERM (engine/stops.py); the main loop stops at its next step
        self.announced_stop = False
        self.store_error: Exception | None = None
        self.writer = _Writer(store, job.run_id, self._store_failed)
        # steps the nodes' roles reported SKIPPED: task -> [nodes, one example "host: message"]
        self.skips: dict[str, list[Any]] = {}

    # -- main loop ----------------------------------------------------------------------------

    def execute(self) -> str | None:
        if self.observer:
            self.observer.rollout_started(self.job.run_id, self.job.plan, self.job.order)
        # beside the Ansible runs' own directories (engine/runner.py), under the store's state directory
        directory = self.job.run_dir or statedir.ensure_private_dir(
            self.store.path.parent / "runs") / self.job.run_id
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        what = (f"rollout {self.job.run_id} stopped: its Ansible processes ended, nodes in flight are "
                f"pending again; `ufcctl resume {self.job.run_id}` continues")
        # stops.stopping() raises Stopped as it ends if a signal came: after _join, that is once
        # every chunk's processes have ended and the last node changes are committed
        with (GateServer(directory, self._on_gate) as gate, stops.stopping(what),
              stops.listening(self._signalled)):
            self.gate_env = gate.env()
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
                if self.ctrl_c or self._over():
                    return
                notes, progressed = self._step(self.clock())
                if not notes and not progressed:
                    self.cond.wait(self._timeout())
            _call(notes)

    def _over(self) -> bool:
        return self.window.complete and not any(c.started and not c.ended for c in self.chunks)

    def _timeout(self) -> float:
        wait = 1.0
        if self.window.admissible and self.window.in_flight_count < self.window.capacity:
            wait = min(wait, max(0.01, self.pacer.wait(self.clock())))  # held back by pacing only
        if self.deadlines:
            wait = min(wait, max(0.01, self.deadlines[0][0] - self.clock()))
        return wait

    def _join(self) -> None:
        for chunk in self.chunks:
            if chunk.thread is not None:
                chunk.thread.join()
        if self.pool is not None:
            self.pool.shutdown(wait=True)
        self.writer.close()  # the last changes committed, their notes made

    def _interrupt(self) -> None:
        with self.cond:
            self.cancelled = True
            self.window.stop("interrupted (SIGINT/SIGTERM); `ufcctl resume` continues")
            notes = self._after_stop()
        _call(notes)

    def _step(self, now: float) -> tuple[list[Note], bool]:
        """One pass of decisions (under the lock): what to do outside it, and whether anything moved."""
        notes: list[Note] = []
        if self.window.stop_reason is not None:
            notes += self._after_stop()
        claimed = self.window.claim()
        for host in claimed:
            if self.pool is None:
                self.window.prepared(host)
            else:
                self.pool.submit(self._prepare, host)
        admitted = self.window.admissions(self.pacer.allowance(now))
        self.pacer.take(len(admitted), now)
        for host in admitted:
            self._admit(host, now)
        expired = self._expire(now)
        self._start_chunks()
        self._settle_chunks(now)
        return notes, bool(claimed or admitted or expired)

    def _after_stop(self) -> list[Note]:
        """No more go: waiting hosts are told to stop, claimed nodes go back to pending."""
        reason = self.window.stop_reason
        for request in self.waiting.values():
            request.answer(STOP, reason)
        self.waiting.clear()
        notes: list[Note] = []
        for host in self.window.unclaim():
            if host in self.prepared:  # drained but never started: back into service
                notes.append(self._release_note(host, True))
        return notes

    # -- admission ----------------------------------------------------------------------------

    def _on_gate(self, request: GateRequest) -> None:
        """A host's play waits at the gate (called on the gate server's thread)."""
        host = request.host
        with self.cond:
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
                self.cond.notify_all()

    def _prepare(self, host: str) -> None:
        """Cordon + drain one node (on the pool); its gate then opens, or says skip."""
        assert self.guard is not None
        skip: str | None = None
        error: Exception | None = None
        try:
            skip = self.guard.prepare(self.job.hosts[host])
        except Exception as err:  # e.g. a drain that timed out: the node is not upgraded
            error = err
        notes: list[Note] = []
        with self.cond:
            if not self.window.is_claimed(host):  # stopped meanwhile: nothing ran on it
                if error is None and skip is None:
                    notes.append(self._release_note(host, True))
            elif error is not None:  # released as failed: whatever the drain did stays (cordoned)
                self.prepared.add(host)
                notes += self._end_unstarted(host, FAILED, f"not started: preparing the node failed: {error}")
            elif skip is not None:
                notes += self._end_unstarted(host, SKIPPED, skip)
            else:
                self.prepared.add(host)
                self.window.prepared(host)
            self.cond.notify_all()
        _call(notes)

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
        self.writer.submit([change], notes, go=self.waiting.pop(host))

    def _expire(self, now: float) -> bool:
        expired = False
        while self.deadlines and self.deadlines[0][0] <= now:
            _, host = heapq.heappop(self.deadlines)
            if host in self.started and host not in self.ended:
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
                if host in self.started and host not in self.ended:
                    self.ended.add(host)
                    self.chunk_of[host].in_flight -= 1
                    self.window.abandon(host)
            self.cond.notify_all()

    # -- processes ----------------------------------------------------------------------------

    def _start_chunks(self) -> None:
        if self.window.stop_reason is not None:
            return
        lead = self.job.plan.capacity
        for chunk in self.chunks:
            if chunk.started:
                if chunk.unstarted > lead:
                    return  # the next process starts when this one has at most a window left to admit
                continue
            if chunk.open == 0:
                continue  # every node ended before its process was needed (skipped when prepared)
            chunk.started = True
            chunk.thread = threading.Thread(target=self._run_chunk, args=(chunk,), name=chunk.run_id,
                                            daemon=True)
            chunk.thread.start()
            if chunk.unstarted > lead:
                return

    def _settle_chunks(self, now: float) -> None:
        stopped = self.window.stop_reason is not None
        for chunk in self.chunks:
            if not chunk.started or chunk.ended or chunk.cancel:
                continue
            if stopped and chunk.in_flight == 0:
                chunk.cancel = True  # nothing of it runs and nothing more will be admitted
            elif chunk.open == 0:
                chunk.settled_at = chunk.settled_at or now
                if now - chunk.settled_at >= self.job.settle_seconds:
                    log.warning("%s: every node ended but the process still runs: cancelled", chunk.run_id)
                    chunk.cancel = True

    def _run_chunk(self, chunk: _Chunk) -> None:
        hosts = [self.job.hosts[h] for h in chunk.hosts]
        result: RunResult | None = None
        error: Exception | None = None
        try:
            result = self.run_fn(
                self.job.playbook, hosts, self.job.options, run_id=chunk.run_id,
                observer=_NodeEvents(self, self.job.marker_task),
                cancel=lambda: self.cancelled or chunk.cancel, env=self.gate_env,
            )
        except Exception as err:  # a broken run must not leave its nodes in flight forever
            log.exception("ansible run %s raised", chunk.run_id)
            error = err
        notes: list[Note] = []
        with self.cond:
            chunk.ended = True
            for host in chunk.hosts:
                notes += self._leftover(chunk, host, result, error)
            self.cond.notify_all()
        _call(notes)

    def _leftover(self, chunk: _Chunk, host: str, result: RunResult | None,
                  error: Exception | None) -> list[Note]:
        """A node of a process that ended: still in flight, or never admitted."""
        if host in self.ended:
            return []
        request = self.waiting.pop(host, None)
        if request is not None:
            request.answer(STOP, "its Ansible process ended")
        self.window.left(host)
        if host in self.started:
            if self.cancelled:
                self._abandon(chunk, host)
                return []
            why = f"ansible run {chunk.run_id} could not run: {error}" if result is None else \
                _leftover_reason(result, host, chunk.run_id)
            return self._end(host, FAILED, why, None)
        if self.cancelled or self.window.stop_reason is not None:
            return []  # stays pending
        if result is None:
            why = f"not started: ansible run {chunk.run_id} could not run: {error}"
        else:
            why = _unstarted_reason(result, host, chunk.run_id)
        return self._end_unstarted(host, FAILED, why[:400])

    def _abandon(self, chunk: _Chunk, host: str) -> None:
        self.ended.add(host)
        chunk.in_flight -= 1
        self.writer.submit([NodeChange(host, PENDING, time.time())], [])
        self.window.abandon(host)

    # -- ends ---------------------------------------------------------------------------------

    def finish(self, host: str, state: str, reason: str | None, changed: bool | None = None) -> None:
        """A node in flight ended (from a process's events). The first report wins."""
        with self.cond:
            notes = self._end(host, state, reason, changed)
            self.cond.notify_all()
        _call(notes)

    def _end(self, host: str, state: str, reason: str | None, changed: bool | None) -> list[Note]:
        """Free the slot now; commit, then announce and release (after the commit). Nodes in flight only."""
        if host in self.ended or host not in self.started:
            return []
        self.ended.add(host)
        chunk = self.chunk_of[host]
        chunk.in_flight -= 1
        chunk.open -= 1
        self.window.finished(host, state)
        notes = self._announce(host, state, reason, self.clock() - self.started[host])
        if self.guard is not None and state != SKIPPED:
            notes.append(self._release_note(host, state == DONE))
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
        self.answers[host] = (SKIP, reason)
        request = self.waiting.pop(host, None)
        if request is not None:
            request.answer(SKIP, reason)
        notes = self._announce(host, state, reason, None)
        if host in self.prepared:  # a failed node stays cordoned (DrainGuard.release)
            notes.append(self._release_note(host, False))
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

    def _release_note(self, host: str, ok: bool) -> Note:
        """Release (uncordon) on the pool, never on an event thread: kubectl may be slow."""
        self.prepared.discard(host)
        guard, pool, node = self.guard, self.pool, self.job.hosts[host]
        assert guard is not None and pool is not None

        def release() -> None:
            try:
                guard.release(node, ok)
            except Exception:
                log.exception("releasing %s failed", node.name)

        return lambda: _submit(pool, release)


def _submit(pool: ThreadPoolExecutor, work: Callable[[], None]) -> None:
    try:
        pool.submit(work)
    except RuntimeError:  # the pool is shut down (the rollout is over): release here
        work()


def _call(notes: Iterable[Note]) -> None:
    for note in notes:
        try:
            note()
        except Exception:  # progress output must never break the rollout
            log.exception("rollout observer failed")


def _leftover_reason(result: RunResult, host: str, ansible_run: str) -> str:
    """Why a node in flight never reached the marker task before its process ended."""
    hr = result.hosts.get(host)
    if hr is not None and hr.unreachable:
        return f"unreachable: {hr.message or 'no message'}"[:400]
    if hr is not None and hr.failed:
        return f"failed at '{hr.failed_task}': {hr.message or 'no message'}"[:400]
    tail = "; ".join(result.output_tail[-3:])
    if hr is None:
        text = f"no result from ansible run {ansible_run} ({result.status}, rc {result.rc}) {tail}"
        return text.strip()[:400]
    return f"ansible run {ansible_run} ended ({result.status}) before the node reached the marker task"


def _unstarted_reason(result: RunResult, host: str, ansible_run: str) -> str:
    """Why a node never reached the gate before its process ended."""
    tail = "; ".join(result.output_tail[-3:])
    hr = result.hosts.get(host)
    if hr is not None and (hr.failed or hr.unreachable):
        return f"not started: failed at '{hr.failed_task}' before the gate: {hr.message or 'no message'}"
    ended = f"not started: ansible run {ansible_run} ended ({result.status}, rc {result.rc})"
    if not result.hosts:  # nothing reported at all: the process failed before any host (syntax, ...)
        return f"{ended} {tail}".strip()
    return f"{ended} before the node reached the gate (is it in the play's hosts?) {tail}".strip()


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
