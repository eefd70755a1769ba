"""`ufcctl etcd status|defrag|prune` for people: live progress of the status queries (members answered
out of members asked, on stderr), then the tables of members, defrag outcomes and orphaned keys."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeElapsedColumn

from ufcctl.domain.etcd.defrag_result import RunReport
from ufcctl.domain.etcd.status import ClusterStatus, PruneResult
from ufcctl.report.live import LiveProgress
from ufcctl.report.output import human_bytes, print_table
from ufcctl.report.terminal import data_column


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
                data_column("last", "dim"),
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


def print_etcd_status(clusters: Sequence[ClusterStatus]) -> None:
    for c in clusters:
        state = "healthy" if c.healthy else "UNHEALTHY: " + "; ".join(c.problems)
        rows = [
            (
                m.member,
                m.health,
                "yes" if m.leader else "",
                human_bytes(m.db_size),
                human_bytes(m.db_size_in_use),
                "-" if m.fragmentation_percent is None else f"{m.fragmentation_percent:.1f}%",
                ",".join(m.alarms) or "-",
                "-"
                if m.last_defrag is None
                else f"{human_bytes(m.last_defrag.before)} -> {human_bytes(m.last_defrag.after)}"
                f" by {m.last_defrag.by}",
            )
            for m in c.members
        ]
        print_table(
            f"etcd {c.cluster}: {state}; alarms: {', '.join(c.alarms) or 'none'}",
            ["member", "health", "leader", "db size", "in use", "frag", "alarms", "last defrag"],
            rows,
        )


def defrag_rows(reports: Sequence[RunReport]) -> list[tuple[str, str, str, str, str, str]]:
    """Rows for printing: cluster, member, action, before, after, reason."""
    rows = []
    for report in reports:
        for o in report.outcomes:
            before = f"{o.before.db_size}/{o.before.db_size_in_use}" if o.before else "-"
            after = f"{o.after.db_size}/{o.after.db_size_in_use}" if o.after else "-"
            rows.append(
                (
                    report.cluster,
                    o.member + (" (leader)" if o.leader else ""),
                    o.action,
                    before,
                    after,
                    o.reason,
                )
            )
    return rows


def print_defrag(reports: Sequence[RunReport], dry_run: bool) -> None:
    print_table(
        "etcd defrag" + (" (dry run)" if dry_run else ""),
        ["cluster", "member", "action", "before (size/in use)", "after", "reason"],
        defrag_rows(reports),
    )
    for r in reports:
        for note in r.notes:
            print(f"{r.cluster}: {note}")


def print_prune(result: PruneResult, yes: bool) -> None:
    print_table(
        f"orphaned keys in etcd {result.cluster}",
        ["prefix", "keys", "deleted"],
        [(p, n, result.deleted.get(p, "-" if not yes else 0)) for p, n in result.counts.items()],
    )
    if not yes and any(result.counts.values()):
        print("Nothing deleted; rerun with --yes to delete these keys.")
