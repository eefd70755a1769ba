"""Every text a terminal gets passes one sanitizer (report/terminal.py; issue 42): the live progress
displays' data columns (a run id, a task name, an etcd endpoint) are never parsed as markup, and whatever
a renderable holds (a `Text` of data, a table title or cell) leaves TerminalConsole with its control
characters shown escaped, rich's own styles and cursor moves aside."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from rich.table import Table
from rich.text import Text

from ufcctl.domain.rollout.plan import Batch, RolloutPlan
from ufcctl.report.etcd import StatusProgress
from ufcctl.report.progress import RunProgress
from ufcctl.report.rollout import RolloutProgress
from ufcctl.report.terminal import TerminalConsole

HOSTILE = [
    ("markup-close", "[/x]", "[/x]"),
    ("markup-open", "[bold]tor-1[/bold]", "[bold]tor-1[/bold]"),
    ("osc-52-clipboard", "\x1b]52;c;ZXZpbA==\x07", "\\x1b]52;c;ZXZpbA==\\x07"),
    ("osc-0-title", "\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),
    ("csi-clear", "\x1b[2J", "\\x1b[2J"),
    ("c1-csi", "\x9b2J", "\\x9b2J"),
    ("bidi-override", "a\u202eb", "a\\u202eb"),
]
RAW = ("\x1b]", "\x1b[2J", "\x9b", "\u202e", "\x07")


def _console() -> tuple[io.StringIO, TerminalConsole]:
    buf = io.StringIO()
    return buf, TerminalConsole(file=buf, force_terminal=True, width=200, color_system="standard")


def _run_progress(console: TerminalConsole, data: str) -> None:
    with RunProgress(console=console) as progress:
        progress.run_started(data, ["h1"])
        progress.task_started(data, data)
        progress._progress.refresh()


def _rollout_progress(console: TerminalConsole, data: str) -> None:
    plan = RolloutPlan(batches=(Batch(0, ("h1",)),), batch_size=1, window=1, canary=0, align="none")
    with RolloutProgress(console=console) as progress:
        progress.rollout_started(data, plan, ["h1"])
        progress._progress.refresh()


def _etcd_progress(console: TerminalConsole, data: str) -> None:
    with StatusProgress(console=console) as progress:
        progress.started(1, 1.0)
        progress.answered(data, data, None, 0.1)
        progress._progress.refresh()


def _renderables(console: TerminalConsole, data: str) -> None:
    table = Table(title=data)
    table.add_column(data)
    table.add_row(Text(data, style="red"))
    console.print(Text(data), table)


SHOWS: list[tuple[str, Callable[[TerminalConsole, str], None]]] = [
    ("run-progress", _run_progress), ("rollout-progress", _rollout_progress),
    ("etcd-status-progress", _etcd_progress), ("text-and-table", _renderables),
]


@pytest.mark.parametrize("show", [s[1] for s in SHOWS], ids=[s[0] for s in SHOWS])
@pytest.mark.parametrize(("data", "escaped"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_data_reaches_the_terminal_escaped_and_never_as_markup(
    show: Callable[[TerminalConsole, str], None], data: str, escaped: str
) -> None:
    buf, console = _console()
    show(console, data)
    out = buf.getvalue()
    assert escaped in out
    assert not any(raw in out for raw in RAW)
    assert "\x1b[" in out  # rich's own styles still pass: only data is escaped
