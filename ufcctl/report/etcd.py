"""Live progress of `ufcctl etcd status`: members answered out of members asked, on stderr."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeElapsedColumn

from ufcctl.report.live import LiveProgress


class StatusProgress(LiveProgress):
    """A StatusObserver drawing a rich bar; plain lines when stderr is not a terminal; silent when quiet."""

    def __init__(self, console: Console | None = None, quiet: bool = False):
        super().__init__(
            (
                TextColumn("[bold]etcd status"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("[red]unreachable {task.fields[unreachable]}[/]"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[last]}", style="dim"),
            ),
            console, quiet, transient=True, markup=False,
        )
        self._task: TaskID | None = None
        self._unreachable = 0

    def started(self, endpoints: int, timeout: float) -> None:
        if self._task is None:
            self._task = self._progress.add_task("status", total=endpoints, unreachable=0, last="")
        else:  # a second round (members the inventory does not list)
            self._progress.update(self._task, total=(self._progress.tasks[0].total or 0) + endpoints)
        self._say(f"asking {endpoints} etcd member(s) at once, at most {timeout:g} s each")

    def answered(self, cluster: str, endpoint: str, error: str | None, seconds: float) -> None:
        if error:
            self._unreachable += 1
            self._say(f"etcd {cluster} {endpoint}: {error}")
        if self._task is not None:
            self._progress.update(
                self._task, advance=1, unreachable=self._unreachable, last=f"{cluster} {endpoint}"
            )
