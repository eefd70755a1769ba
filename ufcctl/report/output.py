"""Printing results: JSON on stdout for machines, rich tables for people."""

from __future__ import annotations

import errno
import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console

from ufcctl.engine.run_result import RunResult
from ufcctl.report.tables import Fitted, new_table, table
from ufcctl.report.terminal import TerminalConsole, styled

STATUS_STYLE = {"ok": "green", "changed": "yellow", "failed": "red", "unreachable": "magenta"}


class StdoutConsole(TerminalConsole):
    """rich's Console for stdout, except that a closed pipe raises BrokenPipeError.

    rich's own answer (Console.on_broken_pipe) is SystemExit(1), which skips ufcctl/cli/main.py:
    there a reader that stopped early (`| head -1`) ends the command quietly with exit 0.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True  # rich drops what is still buffered instead of trying again
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def stdout_console() -> Console:
    return StdoutConsole()


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    stdout_console().print(table(columns, rows, title))


def print_run_summary(result: RunResult, max_rows: int = 50) -> None:
    """Recap of one run: totals, then the hosts that failed (all hosts when the run is small)."""
    console = stdout_console()
    totals = result.totals()
    mode = " (check mode)" if result.check else ""
    console.print(styled(
        (result.playbook, "bold"), f"{mode}: {result.outcome} in {result.seconds:.1f}s — "
        f"{len(result.hosts)} host(s): ok={totals['ok']} changed={totals['changed']} "
        f"failed={totals['failed']} unreachable={totals['unreachable']} skipped={totals['skipped']}"))
    shown = [r for r in result.hosts.values() if not r.succeeded] if len(result.hosts) > max_rows else list(
        result.hosts.values()
    )
    if shown:
        recap = new_table(("host", "status", "ok", "changed", "failed", "skipped", "first failure"))
        for r in shown[:max_rows]:
            failure = f"{r.failed_task}: {r.message}" if r.failed_task else ""
            style = STATUS_STYLE.get(r.status, "")
            recap.add_row(r.host, styled((r.status, style)), str(r.ok), str(r.changed), str(r.failed),
                          str(r.skipped), failure[:160])
        console.print(Fitted(recap))
        if len(shown) > max_rows:
            console.print(f"... and {len(shown) - max_rows} more; see {result.run_dir}/summary.json")
    if result.not_run:
        console.print(f"not run by any play: {len(result.not_run)} host(s) (no play targets their groups)")
    console.print(f"artifacts: {result.run_dir}", style="dim")


def human_bytes(value: float | None) -> str:
    """A byte count in binary units for tables ("-" when unknown)."""
    if value is None:
        return "-"
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= factor:
            return f"{value / factor:.1f} {unit}"
    return f"{value:.0f} B"
