"""Live progress of playbook runs: one bar per run with ok/changed/failed/unreachable and the current task."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeElapsedColumn

from ufcctl.engine.run_result import RunResult
from ufcctl.report.live import LiveProgress
from ufcctl.report.terminal import data_column


@dataclass
class _RunState:
    task_id: TaskID
    hosts: int
    counts: dict[str, int] = field(
        default_factory=lambda: {"ok": 0, "changed": 0, "failed": 0, "unreachable": 0, "skipped": 0}
    )
    done_hosts: set[str] = field(default_factory=set)
    current: str = ""


class RunProgress(LiveProgress):
    """A RunObserver drawing a rich progress display; plain lines when stderr is not a terminal.

    The bar counts hosts whose run has finished badly (failed/unreachable: Ansible stops them) or
    finished at all; host-task counters move with every result so a long play never looks stuck.
    """

    def __init__(self, console: Console | None = None, quiet: bool = False):
        super().__init__(
            (
                data_column("label", "bold"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(
                    "ok {task.fields[ok]} changed {task.fields[changed]} "
                    "[red]failed {task.fields[failed]}[/] [magenta]unreachable {task.fields[unreachable]}[/]"
                ),
                TimeElapsedColumn(),
                data_column("current", "dim"),
            ),
            console, quiet,
        )
        self._lock = threading.Lock()
        self._runs: dict[str, _RunState] = {}

    def run_started(self, run_id: str, hosts: list[str]) -> None:
        with self._lock:
            task_id = self._progress.add_task(
                run_id, total=len(hosts), label=run_id, current="", ok=0, changed=0, failed=0, unreachable=0
            )
            self._runs[run_id] = _RunState(task_id, len(hosts))
        self._say(f"[{run_id}] started on {len(hosts)} host(s)")

    def task_started(self, run_id: str, task: str) -> None:
        with self._lock:
            state = self._runs.get(run_id)
            if state is None:
                return
            state.current = task
            self._progress.update(state.task_id, current=task[:60])
        self._say(f"[{run_id}] TASK {task}")

    def host_task_done(self, run_id: str, host: str, task: str, status: str, message: str | None) -> None:
        with self._lock:
            state = self._runs.get(run_id)
            if state is None:
                return
            state.counts[status] = state.counts.get(status, 0) + 1
            if status in ("failed", "unreachable"):
                state.done_hosts.add(host)
            fields: dict[str, Any] = dict(state.counts)  # the bar's columns read them by status name
            self._progress.update(state.task_id, completed=len(state.done_hosts), **fields)
        if message:
            self._say(f"[{run_id}] {status.upper()} {host}: {task}: {message.splitlines()[0][:200]}")

    def run_finished(self, result: RunResult) -> None:
        with self._lock:
            state = self._runs.get(result.run_id)
            if state is None:
                return
            self._progress.update(state.task_id, completed=state.hosts, current=result.outcome)
        totals = result.totals()
        self._say(
            f"[{result.run_id}] {result.outcome}: ok={totals['ok']} changed={totals['changed']} "
            f"failed={totals['failed']} unreachable={totals['unreachable']} in {result.seconds:.1f}s"
        )
