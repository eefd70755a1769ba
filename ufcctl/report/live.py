"""The one shape of ufcctl's live progress displays (playbook runs, rollouts, etcd status).

A rich Progress on stderr while stderr is a terminal; plain lines when it is not (CI logs, pipes);
nothing at all when quiet. Each display only says which columns it draws and what it counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from rich.console import Console
from rich.progress import Progress, ProgressColumn

from ufcctl.report.terminal import TerminalConsole


class LiveProgress:
    def __init__(self, columns: Sequence[str | ProgressColumn], console: Console | None = None,
                 quiet: bool = False, *, transient: bool = False, markup: bool = True):
        self.console = console or TerminalConsole(stderr=True)
        self.quiet = quiet
        self.live = self.console.is_terminal and not quiet
        self._markup = markup  # False where the lines quote what others wrote (addresses, errors)
        self._progress = Progress(*columns, console=self.console, transient=transient, disable=not self.live)

    def __enter__(self) -> Self:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def _say(self, text: str) -> None:
        """A plain line instead of the live display (off a terminal), never when quiet."""
        if not self.live and not self.quiet:
            self.console.print(text, highlight=False, markup=self._markup)
