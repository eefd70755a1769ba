"""Rollout output: live progress (overall and per batch), plan tables, final report, run lists."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeElapsedColumn

from ufcctl.domain.rollout.plan import Projection, RolloutPlan
from ufcctl.domain.rollout.summary import RolloutSummary
from ufcctl.errors import RunFailed
from ufcctl.report.live import LiveProgress
from ufcctl.report.output import print_json, stdout_console
from ufcctl.report.tables import Fitted, new_table
from ufcctl.report.terminal import data_column, styled
from ufcctl.rollout.store import RunRecord

STATE_STYLE = {"done": "green", "failed": "red", "skipped": "yellow", "pending": "dim", "running": "cyan"}
MAX_ROWS = 50  # rows of a table before "... N more" (JSON output always has everything)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class RolloutProgress(LiveProgress):
    """A RolloutObserver: one overall bar plus one bar per batch in flight; plain lines off a terminal."""

    def __init__(self, console: Console | None = None, quiet: bool = False):
        super().__init__(
            (data_column("label", "bold"), BarColumn(), MofNCompleteColumn(),
             TextColumn("[green]done {task.fields[done]}[/] [red]failed {task.fields[failed]}[/] "
                        "[yellow]skipped {task.fields[skipped]}[/]"),
             TimeElapsedColumn()),
            console, quiet,
        )
        self._lock = threading.Lock()
        self._overall: TaskID | None = None
        self._batches: dict[int, TaskID] = {}
        self._batch_total: dict[int, int] = {}
        self._batch_done: dict[int, dict[str, int]] = {}
        self._canary: set[int] = set()
        self._counts = {"done": 0, "failed": 0, "skipped": 0}

    def rollout_started(self, run_id: str, plan: RolloutPlan, todo: Sequence[str]) -> None:
        wanted = set(todo)
        with self._lock:
            for batch in plan.batches:
                self._batch_total[batch.index] = sum(1 for h in batch.hosts if h in wanted)
                self._batch_done[batch.index] = {"done": 0, "failed": 0, "skipped": 0}
                if batch.canary:
                    self._canary.add(batch.index)
            self._overall = self._progress.add_task("all", total=len(todo), label=f"{run_id}", done=0,
                                                    failed=0, skipped=0)
        self._say(f"[{run_id}] {len(todo)} node(s) in {len(plan.batches)} batch(es), "
                  f"up to {plan.capacity} in flight")

    def node_started(self, host: str, batch: int) -> None:
        with self._lock:
            if batch not in self._batches:
                label = f"batch {batch}" + (" (canary)" if batch in self._canary else "")
                self._batches[batch] = self._progress.add_task(
                    label, total=self._batch_total.get(batch, 0), label=label, done=0, failed=0, skipped=0)
                self._say(f"{label} started")

    def node_finished(self, host: str, batch: int, state: str, reason: str | None,
                      seconds: float | None) -> None:
        with self._lock:
            self._counts[state] = self._counts.get(state, 0) + 1
            counts = self._batch_done.setdefault(batch, {"done": 0, "failed": 0, "skipped": 0})
            counts[state] = counts.get(state, 0) + 1
            finished = sum(counts.values())
            if self._overall is not None:
                self._progress.update(self._overall, completed=sum(self._counts.values()),
                                      done=self._counts["done"], failed=self._counts["failed"],
                                      skipped=self._counts["skipped"])
            task = self._batches.get(batch)
            if task is not None:
                complete = finished >= self._batch_total.get(batch, 0)
                self._progress.update(task, completed=finished, visible=not complete, done=counts["done"],
                                      failed=counts["failed"], skipped=counts["skipped"])
        why = f": {reason}" if reason else ""
        self._say(f"batch {batch} {host} {state} in {duration(seconds)}{why}")

    def stopped(self, reason: str) -> None:
        self.console.print(styled(("stopping:", "bold red"), f" {reason}; in-flight nodes finish"))


def print_plan(plan: RolloutPlan, projection: Projection | None, targets: int, *,
               all_rows: bool = False) -> None:
    console = stdout_console()
    canary = len(plan.canary_hosts())
    console.print(
        f"{targets} node(s) in {len(plan.batches)} batch(es) of up to {plan.batch_size}"
        f"{f', canary {canary} first' if canary else ''}, window {plan.window} "
        f"({plan.capacity} node(s) in flight), aligned by {plan.align}", highlight=False)
    table = new_table(("batch", "nodes", "first", "last", "domains"))
    rows = plan.batches if all_rows else plan.batches[:MAX_ROWS]
    for batch in rows:
        domains = ", ".join(batch.domains[:4]) + (" ..." if len(batch.domains) > 4 else "")
        table.add_row(f"{batch.index}{' canary' if batch.canary else ''}", str(len(batch.hosts)),
                      batch.hosts[0], batch.hosts[-1], domains)
    console.print(Fitted(table))
    if len(plan.batches) > len(rows):
        console.print(f"... and {len(plan.batches) - len(rows)} more batch(es) (--all or --output json)")
    if projection is None:
        console.print("projected duration: unknown (no earlier run measured a node; pass --node-seconds)")
    else:
        console.print(
            f"projected duration: {duration(projection.total_seconds)} "
            f"at {duration(projection.node_seconds)} "
            f"per node ({projection.source}); canary {duration(projection.canary_seconds)}, "
            f"rest {duration(projection.rollout_seconds)}", highlight=False)


def plan_json(plan: RolloutPlan, projection: Projection | None, targets: int) -> dict[str, Any]:
    return {"targets": targets, "batch_size": plan.batch_size, "window": plan.window,
            "capacity": plan.capacity, "canary": plan.canary, "align": plan.align,
            "batches": [b.to_json() for b in plan.batches],
            "projection": projection.to_json() if projection else None}


def print_summary(summary: RolloutSummary) -> None:
    """Final report: status line, steps, then failed/skipped nodes (every node when the fleet is small)."""
    console = stdout_console()
    counts = summary.counts
    took = f" in {duration(summary.seconds)}" if summary.seconds is not None else ""
    mode = " (dry run: Ansible check mode)" if summary.dry_run else ""
    console.print(styled(
        (summary.kind, "bold"), f" {summary.run_id}{mode}: ", (summary.status, "bold"),
        f"{took} - done {counts['done']} (changed {summary.changed}), failed {counts['failed']}, "
        f"skipped {counts['skipped']}, pending {counts['pending']}"))
    for step, outcome in summary.steps.items():
        console.print(f"{step}: {outcome}", highlight=False)
    if summary.message:
        console.print(styled(("stopped:", "red"), f" {summary.message}"))
    shown = list(summary.nodes) if len(summary.nodes) <= MAX_ROWS else summary.failed + summary.skipped
    if shown:
        table = new_table(("host", "batch", "state", "changed", "time", "tries", "reason"))
        for node in shown[:MAX_ROWS]:
            style = STATE_STYLE.get(node.state, "")
            changed = "-" if node.changed is None else ("yes" if node.changed else "no")
            table.add_row(node.host, str(node.batch), styled((node.state, style)), changed,
                          duration(node.seconds), str(node.attempts), (node.reason or "")[:160])
        console.print(Fitted(table))
        if len(shown) > MAX_ROWS:
            console.print(f"... and {len(shown) - MAX_ROWS} more; `--output json` lists every node")
    times = sorted(n.seconds for n in summary.nodes if n.seconds is not None and n.state == "done")
    if times:
        console.print(f"node time: median {duration(times[len(times) // 2])}, max {duration(times[-1])}",
                      highlight=False)


def _near(path: str) -> str:
    """An inventory path as the user would type it here: relative to the working directory when below it."""
    try:
        here = os.getcwd()
        return os.path.relpath(path) if path and os.path.commonpath([here, path]) == here else path
    except ValueError:  # a relative path recorded by an older ufcctl, or another drive
        return path


def print_runs(runs: Sequence[RunRecord]) -> None:
    # The node counts share one column (words that wrap) so that the table fits 80 columns; the run id,
    # which starts with the kind's name, is never wrapped (it is what `ufcctl resume` takes)
    table = new_table(("run", "status", "started", "nodes", "inventory"))
    for run in runs:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.created))
        counts = {**{s: run.counts.get(s, 0) for s in ("done", "failed", "skipped")},
                  "pending": run.counts.get("pending", 0) + run.counts.get("running", 0)}
        nodes = ", ".join(f"{n} {state}" for state, n in counts.items() if n) or "0"
        table.add_row(run.run_id, run.status, started, nodes, _near(run.inventory))
    stdout_console().print(Fitted(table, whole=("run",)))


def runs_json(runs: Sequence[RunRecord]) -> list[dict[str, Any]]:
    return [{"run_id": r.run_id, "kind": r.kind, "status": r.status, "created": r.created,
             "finished": r.finished, "message": r.message, "steps": r.steps, "counts": r.counts,
             "inventory": r.inventory, "params": r.params} for r in runs]


def summary_out(summary: RolloutSummary, output: str) -> None:
    """A fleet command's ending: the summary as text or JSON, and RunFailed (exit 1) unless it is done."""
    if output == "json":
        print_json(summary.to_json())
    elif output != "quiet":  # quiet: the caller printed it (deploy's JSON holds both phases)
        print_summary(summary)
    if summary.status != "done":
        failed = [n.host for n in summary.failed]
        names = f": {', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}" if failed else ""
        why = f" ({summary.message})" if summary.message else ""
        raise RunFailed(
            f"{summary.kind} {summary.run_id} {summary.status}: {len(failed)} node(s) failed{names}{why}",
            f"fix the nodes, then `ufcctl resume {summary.run_id} --retry-failed` "
            f"(done nodes are never redone); `ufcctl runs` lists runs",
        )
