"""The executor's Ansible processes: one long-lived ansible-playbook per chunk of the start order.

A chunk's process serves its nodes for their whole rollout (the gate admits them one by one); the
next chunk's process starts while the previous one still has up to a window of nodes to admit, so
it has started by the time they are admitted and no slot idles at the boundary. A process's events
end its nodes (`NodeEvents`); what it leaves behind when it ends is the executor's to record, with
the reasons given here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ufcctl.domain.rollout.order import chunks
from ufcctl.domain.rollout.states import DONE, FAILED
from ufcctl.engine.run_events import MAX_MESSAGE_CHARS
from ufcctl.engine.runner import RunResult
from ufcctl.rollout.job import RolloutJob, RunFn

# A module's result key holding one line about its node, which a fleet run keeps as the node's reason
# when it ends done (roles/ascend_driver's `npu check` run: every chip's fabric verdict and the pings).
NODE_REPORT = "ufc_node_report"

log = logging.getLogger(__name__)


@dataclass
class Chunk:
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


class NodeEnds(Protocol):
    """Where a process's events go (the executor)."""

    def finish(self, host: str, state: str, reason: str | None, changed: bool | None = None) -> None: ...

    def skipped_step(self, host: str, task: str, message: str) -> None: ...


class NodeEvents:
    """A RunObserver for one Ansible process that turns marker and failure events into node ends."""

    def __init__(self, ends: NodeEnds, marker: str):
        self.ends = ends
        self.marker = marker
        self.reports: dict[str, str] = {}  # a node's report line (NODE_REPORT)

    def result(self, host: str, res: Mapping[str, Any]) -> None:
        """A successful host-task's result (the run's on_result): its NODE_REPORT line, if any, is kept as
        the node's reason when it reaches the marker (done)."""
        report = res.get(NODE_REPORT)
        if isinstance(report, str) and report:
            self.reports[host] = report[:MAX_MESSAGE_CHARS]

    def run_started(self, run_id: str, hosts: list[str]) -> None:
        pass

    def task_started(self, run_id: str, task: str) -> None:
        pass

    def host_task_done(self, run_id: str, host: str, task: str, status: str, message: str | None) -> None:
        if status in ("ok", "changed") and message:  # a step the role reported SKIPPED (engine/run_events.py)
            self.ends.skipped_step(host, task, message)
        if task == self.marker and status in ("ok", "changed"):
            self.ends.finish(host, DONE, self.reports.pop(host, None), changed=status == "changed")
        elif status in ("failed", "unreachable"):
            first = (message or "").strip().splitlines()[0][:300] if message else "no message"
            self.ends.finish(host, FAILED, f"{status} at '{task}': {first}")

    def run_finished(self, result: RunResult) -> None:
        pass


ChunkEnded = Callable[[Chunk, RunResult | None, Exception | None], None]


class ChunkProcesses:
    """The chunks of one rollout and their processes (each on a thread of its own). start_due and
    settle are called under the executor's lock; a process's end is reported to `on_ended`."""

    def __init__(self, job: RolloutJob, run_fn: RunFn, ends: NodeEnds, on_ended: ChunkEnded,
                 cancelled: Callable[[], bool]):
        self.job = job
        self.run_fn = run_fn
        self.ends = ends
        self.on_ended = on_ended
        self.cancelled = cancelled
        self.chunks = [Chunk(i, f"{job.run_id}-c{i + 1:03d}", hosts, open=len(hosts))
                       for i, hosts in enumerate(chunks(job.order, job.chunk_size))]
        self.chunk_of = {h: c for c in self.chunks for h in c.hosts}
        self.gate_env: dict[str, str] = {}  # the gate's socket, for every process

    @property
    def running(self) -> bool:
        return any(c.started and not c.ended for c in self.chunks)

    def start_due(self) -> None:
        """Start the next chunks' processes while the ones before have at most a window left to admit."""
        lead = self.job.plan.capacity
        for chunk in self.chunks:
            if chunk.started:
                if chunk.unstarted > lead:
                    return  # the next process starts when this one has at most a window left to admit
                continue
            if chunk.open == 0:
                continue  # every node ended before its process was needed (skipped when prepared)
            chunk.started = True
            chunk.thread = threading.Thread(target=self._run, args=(chunk,), name=chunk.run_id, daemon=True)
            chunk.thread.start()
            if chunk.unstarted > lead:
                return

    def settle(self, now: float, stopped: bool) -> None:
        """Cancel processes with nothing left to do: after a stop, or every node ended long enough ago."""
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

    def join(self) -> None:
        for chunk in self.chunks:
            if chunk.thread is not None:
                chunk.thread.join()

    def _run(self, chunk: Chunk) -> None:
        hosts = [self.job.hosts[h] for h in chunk.hosts]
        result: RunResult | None = None
        error: Exception | None = None
        try:
            events = NodeEvents(self.ends, self.job.marker_task)
            result = self.run_fn(
                self.job.playbook, hosts, self.job.options, run_id=chunk.run_id,
                observer=events, on_result=events.result,
                cancel=lambda: self.cancelled() or chunk.cancel, env=self.gate_env,
            )
        except Exception as err:  # a broken run must not leave its nodes in flight forever
            log.exception("ansible run %s raised", chunk.run_id)
            error = err
        self.on_ended(chunk, result, error)


def leftover_reason(result: RunResult, host: str, ansible_run: str) -> str:
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


def unstarted_reason(result: RunResult, host: str, ansible_run: str) -> str:
    """Why a node never reached the gate before its process ended."""
    tail = "; ".join(result.output_tail[-3:])
    hr = result.hosts.get(host)
    if hr is not None and (hr.failed or hr.unreachable):
        return f"not started: failed at '{hr.failed_task}' before the gate: {hr.message or 'no message'}"
    ended = f"not started: ansible run {ansible_run} ended ({result.status}, rc {result.rc})"
    if not result.hosts:  # nothing reported at all: the process failed before any host (syntax, ...)
        return f"{ended} {tail}".strip()
    return f"{ended} before the node reached the gate (is it in the play's hosts?) {tail}".strip()
