"""Executing a rollout plan: a sliding window of ansible-runner runs; node states committed as they change.

Why runs of up to one batch with `strategy: free`, and not one run per node (measured here, 2 cores):
an ansible-playbook start costs about 2.3 s of controller CPU before the first task, and each task
about 0.7 s of CPU (docs/reference/scale.md §1.2's figure, matched locally: 10 trivial tasks took 8.3 s
user time). One run per node would pay the start-up for every node: 16,000 x 2.3 s = 10 CPU-hours,
and here on 2 cores it would eat most of the CPU a small lab has. One run per batch pays it once per
batch. Inside a run `strategy: free` lets every node race through the role on its own; the role's
last task is a marker, and its event (RunObserver.host_task_done) marks the node done the moment it
finishes. The node's slot is then free at once (domain/rollout/window.py), so a straggler holds
one slot and never a batch: the next run starts with the free slots while the straggler's run is
still going. Several runs overlap; each has its own run directory and inventory (engine/runner.py).

Kill -9 safety: a node is committed `running` before its run starts and `done`/`failed` when its
event arrives; resume turns `running` back into `pending` and never touches `done`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ufcctl.domain.inventory.model import Host
from ufcctl.domain.rollout.budget import FailureBudget
from ufcctl.domain.rollout.plan import RolloutPlan
from ufcctl.domain.rollout.states import DONE, FAILED, SKIPPED
from ufcctl.domain.rollout.window import RolloutWindow, WindowPolicy
from ufcctl.engine.runner import RunOptions, RunResult
from ufcctl.rollout.store import StateError, StateStore

log = logging.getLogger(__name__)

RunFn = Callable[..., RunResult]  # engine.runner.run_playbook's signature


class RolloutObserver(Protocol):
    """Live progress of a rollout (called from worker threads; implementations must be thread-safe)."""

    def rollout_started(self, run_id: str, plan: RolloutPlan, todo: Sequence[str]) -> None: ...

    def node_started(self, host: str, batch: int) -> None: ...

    def node_finished(self, host: str, batch: int, state: str, reason: str | None,
                      seconds: float | None) -> None: ...

    def stopped(self, reason: str) -> None: ...


class NodeGuard(Protocol):
    """Work around each node outside Ansible (cordon/drain); prepare returns a skip reason or None."""

    def prepare(self, host: Host) -> str | None: ...

    def release(self, host: Host, ok: bool) -> None: ...


@dataclass(frozen=True)
class RolloutJob:
    run_id: str
    playbook: Path
    plan: RolloutPlan
    hosts: Mapping[str, Host]
    todo: tuple[str, ...]
    options: RunOptions
    marker_task: str  # the role's last task: its ok/changed event means the node is done
    budget: FailureBudget
    coalesce_seconds: float = 2.0
    done_before: int = 0  # earlier attempts of the same run (resume), for the failure budget
    failed_before: int = 0


class _NodeEvents:
    """A RunObserver for one ansible run that turns marker and failure events into node ends."""

    def __init__(self, execution: _Execution, marker: str):
        self.execution = execution
        self.marker = marker

    def run_started(self, run_id: str, hosts: list[str]) -> None:
        pass

    def task_started(self, run_id: str, task: str) -> None:
        pass

    def host_task_done(self, run_id: str, host: str, task: str, status: str, message: str | None) -> None:
        if task == self.marker and status in ("ok", "changed"):
            self.execution.finish(host, DONE, None, changed=status == "changed")
        elif status in ("failed", "unreachable"):
            first = (message or "").strip().splitlines()[0][:300] if message else "no message"
            self.execution.finish(host, FAILED, f"{status} at '{task}': {first}")

    def run_finished(self, result: RunResult) -> None:
        pass


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
        policy = WindowPolicy(job.plan.capacity, job.plan.batch_size, job.coalesce_seconds)
        self.window = RolloutWindow(job.plan, job.todo, policy, job.budget,
                                    done=job.done_before, failed=job.failed_before)
        self.batch_of = job.plan.batch_of()
        self.cond = threading.Condition()
        self.started: dict[str, float] = {}
        self.ended: set[str] = set()
        self.threads: list[threading.Thread] = []
        self.cancelled = False
        self.announced_stop = False
        self.runs = 0

    # -- main loop ----------------------------------------------------------------------------

    def execute(self) -> str | None:
        if self.observer:
            self.observer.rollout_started(self.job.run_id, self.job.plan, self.job.todo)
        try:
            with self.cond:
                while not self.window.complete:
                    now = self.clock()
                    hosts = self.window.next_run(now)
                    if hosts:
                        self._launch(hosts)
                        continue
                    wake = self.window.wake_at()
                    self.cond.wait(1.0 if wake is None else min(1.0, max(0.01, wake - now)))
        except KeyboardInterrupt:
            with self.cond:
                self.cancelled = True
                self.window.stop("interrupted by the user (Ctrl-C); `ufcctl resume` continues")
            self._join()
            raise
        self._join()
        return self.window.stop_reason

    def _join(self) -> None:
        for thread in self.threads:
            thread.join()

    def _launch(self, hosts: tuple[str, ...]) -> None:
        self.runs += 1
        ansible_run = f"{self.job.run_id}-run{self.runs:03d}"
        # committed before anything touches the nodes: a crash from here on leaves them `running`
        self.store.mark_running(self.job.run_id, hosts, ansible_run)
        now = self.clock()
        for host in hosts:
            self.started[host] = now
            if self.observer:
                self.observer.node_started(host, self.batch_of[host])
        thread = threading.Thread(target=self._run, args=(ansible_run, hosts), name=ansible_run, daemon=True)
        self.threads.append(thread)
        thread.start()

    # -- one ansible run ----------------------------------------------------------------------

    def _run(self, ansible_run: str, hosts: tuple[str, ...]) -> None:
        go = list(hosts)
        if self.guard is not None:
            go = []
            for host in hosts:
                try:
                    reason = self.guard.prepare(self.job.hosts[host])
                except Exception as err:  # e.g. a drain that timed out: the node is not upgraded
                    self.finish(host, FAILED, f"not started: preparing the node failed: {err}")
                    continue
                if reason is None:
                    go.append(host)
                else:
                    self.finish(host, SKIPPED, reason)
        if not go:
            return
        try:
            result = self.run_fn(
                self.job.playbook, [self.job.hosts[h] for h in go], self.job.options,
                run_id=ansible_run, observer=_NodeEvents(self, self.job.marker_task),
                cancel=lambda: self.cancelled,
            )
        except Exception as err:  # a broken run must not leave its nodes in flight forever
            log.exception("ansible run %s raised", ansible_run)
            for host in go:
                self.finish(host, FAILED, f"ansible run {ansible_run} could not run: {err}")
            return
        for host in go:
            if self.cancelled:
                self._abandon(host)
            else:
                self.finish(host, FAILED, _leftover_reason(result, host, ansible_run))

    def _abandon(self, host: str) -> None:
        with self.cond:
            if host in self.ended:
                return
            self.ended.add(host)
            self.store.reset_hosts(self.job.run_id, [host])
            self.window.abandon(host)
            self.cond.notify_all()

    def finish(self, host: str, state: str, reason: str | None, changed: bool | None = None) -> None:
        """First report wins: a node's end is committed, freed in the window, then announced."""
        with self.cond:
            if host in self.ended or host not in self.started:
                return
            self.ended.add(host)
            try:
                self.store.mark_finished(self.job.run_id, host, state, reason, changed)
            except StateError:
                log.exception("state store refused %s -> %s", host, state)
            self.window.finished(host, state, self.clock())
            stop = self.window.stop_reason if not self.announced_stop else None
            self.announced_stop = self.announced_stop or stop is not None
            seconds = self.clock() - self.started[host]
            self.cond.notify_all()
        if self.observer:
            self.observer.node_finished(host, self.batch_of[host], state, reason, seconds)
            if stop:
                self.observer.stopped(stop)
        if self.guard is not None and state != SKIPPED:
            try:
                self.guard.release(self.job.hosts[host], state == DONE)
            except Exception:
                log.exception("releasing %s failed", host)


def _leftover_reason(result: RunResult, host: str, ansible_run: str) -> str:
    """Why a node of a finished run never reached the marker task."""
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


def execute_rollout(
    job: RolloutJob,
    store: StateStore,
    run_fn: RunFn,
    *,
    observer: RolloutObserver | None = None,
    guard: NodeGuard | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> str | None:
    """Run the job's pending nodes through the window; returns the stop reason, or None."""
    return _Execution(job, store, run_fn, observer, guard, clock).execute()

