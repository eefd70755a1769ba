"""`ufcctl etcd status` progress: plain lines off a terminal, a live bar on one, nothing when quiet."""

from __future__ import annotations

import io

from rich.console import Console

from ufcctl.report.etcd import StatusProgress


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=120), out


def test_plain_lines_name_each_member_that_did_not_answer() -> None:
    console, out = _console(terminal=False)
    with StatusProgress(console) as progress:
        progress.started(3, 5.0)
        progress.answered("core", "https://10.0.0.1:2379", None, 0.01)
        progress.answered("core", "https://10.0.0.2:2379", "no answer within 5 s", 5.0)
        progress.started(1, 5.0)  # a second round
        progress.answered("core", "https://10.0.0.4:2379", None, 0.01)
    lines = out.getvalue().splitlines()
    assert lines == [
        "asking 3 etcd member(s) at once, at most 5 s each",
        "etcd core https://10.0.0.2:2379: no answer within 5 s",
        "asking 1 etcd member(s) at once, at most 5 s each",
    ]


def test_quiet_prints_nothing() -> None:
    console, out = _console(terminal=False)
    with StatusProgress(console, quiet=True) as progress:
        progress.started(1, 5.0)
        progress.answered("core", "https://10.0.0.2:2379", "no answer within 5 s", 5.0)
    assert out.getvalue() == ""


def test_a_terminal_gets_the_bar_with_counts() -> None:
    console, out = _console(terminal=True)
    with StatusProgress(console) as progress:
        progress.started(2, 5.0)
        progress.answered("pods", "https://10.0.0.3:2385", "no answer within 5 s", 5.0)
        progress._progress.refresh()
        drawn = out.getvalue()
    assert "etcd status" in drawn and "1/2" in drawn and "unreachable 1" in drawn
