"""`ufcctl etcd status|defrag|prune`: flags and printing for the etcd maintenance use cases."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import click

from ufcctl.app.etcd_maint import (
    STATUS_TIMEOUT,
    ClusterStatus,
    RunReport,
    etcd_defrag,
    etcd_prune,
    etcd_status,
    summarize_reports,
)
from ufcctl.cli import numbers
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.errors import RunFailed
from ufcctl.report.etcd import StatusProgress
from ufcctl.report.output import human_bytes, print_json, print_table

CLUSTERS = click.Choice(["core", "events", "pods"])


@click.group()
def etcd() -> None:
    """Status and maintenance of the three etcd clusters (core, events, pods)."""


@etcd.command()
@inventory_option()
@click.option("--cluster", type=CLUSTERS, default=None, help="Only this cluster.")
@click.option(
    "--timeout", type=numbers.number(0.001, numbers.MAX_SECONDS), default=STATUS_TIMEOUT, show_default=True,
    help="Seconds each member has to answer; every member is asked at once.",
)
@output_option()
def status(inventory: Path, cluster: str | None, timeout: float, output: str) -> None:
    """Health, leader, db size, in use, fragmentation, alarms and last defrag per member.

    Exits 1 when a cluster is unhealthy, an unreachable member included.
    """
    with StatusProgress(quiet=output == "json") as progress:
        clusters = etcd_status(inventory, cluster, timeout, progress)
    if output == "json":
        print_json([c.to_json() for c in clusters])
    else:
        _print_status(clusters)
    unhealthy = [c.cluster for c in clusters if not c.healthy]
    if unhealthy:
        raise RunFailed(f"unhealthy etcd cluster(s): {', '.join(unhealthy)}", "see the problems listed above")


def _print_status(clusters: Sequence[ClusterStatus]) -> None:
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


@etcd.command()
@inventory_option()
@click.option("--cluster", type=CLUSTERS, default=None, help="Only this cluster (default: all three).")
@click.option(
    "--dry-run", is_flag=True, help="Decide and report; take no lock, compact and defragment nothing."
)
@output_option()
def defrag(inventory: Path, cluster: str | None, dry_run: bool, output: str) -> None:
    """Defragment members that the rule selects, one at a time, the leader last (the agents' procedure)."""

    def log(line: str) -> None:
        click.echo(line, err=output == "json")

    reports = etcd_defrag(inventory, cluster, dry_run, log=log)
    if output == "json":
        print_json([r.to_json() for r in reports])
    else:
        _print_defrag(reports, dry_run)
    failed = [f"{r.cluster}/{o.member}" for r in reports for o in r.outcomes if o.action == "failed"]
    if failed:
        raise RunFailed(f"defrag failed on {', '.join(failed)}", "see the reasons above; rerun when healthy")


def _print_defrag(reports: Sequence[RunReport], dry_run: bool) -> None:
    print_table(
        "etcd defrag" + (" (dry run)" if dry_run else ""),
        ["cluster", "member", "action", "before (size/in use)", "after", "reason"],
        summarize_reports(reports),
    )
    for r in reports:
        for note in r.notes:
            click.echo(f"{r.cluster}: {note}")


@etcd.command()
@inventory_option()
@click.option("--cluster", type=CLUSTERS, required=True, help="The cluster to clean (core).")
@click.option("--yes", is_flag=True, help="Delete the keys found (default: only count them).")
@output_option()
def prune(inventory: Path, cluster: str, yes: bool, output: str) -> None:
    """Find keys left in core for resources routed to the events/pods clusters; delete them with --yes."""
    result = etcd_prune(inventory, cluster, yes)
    if output == "json":
        print_json({"cluster": result.cluster, "counts": result.counts, "deleted": result.deleted})
        return
    print_table(
        f"orphaned keys in etcd {result.cluster}",
        ["prefix", "keys", "deleted"],
        [(p, n, result.deleted.get(p, "-" if not yes else 0)) for p, n in result.counts.items()],
    )
    if not yes and any(result.counts.values()):
        click.echo("Nothing deleted; rerun with --yes to delete these keys.", file=sys.stdout)


COMMANDS = [etcd]
