"""`ufcctl etcd status|defrag|prune`: flags and printing for the etcd maintenance use cases."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app.etcd_maint import STATUS_TIMEOUT, etcd_defrag, etcd_prune, etcd_status
from ufcctl.cli import numbers
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.errors import RunFailed
from ufcctl.report.etcd import StatusProgress, print_defrag, print_etcd_status, print_prune
from ufcctl.report.output import print_json

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
        print_etcd_status(clusters)
    unhealthy = [c.cluster for c in clusters if not c.healthy]
    if unhealthy:
        raise RunFailed(f"unhealthy etcd cluster(s): {', '.join(unhealthy)}", "see the problems listed above")


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
        print_defrag(reports, dry_run)
    failed = [f"{r.cluster}/{o.member}" for r in reports for o in r.outcomes if o.action == "failed"]
    if failed:
        raise RunFailed(f"defrag failed on {', '.join(failed)}", "see the reasons above; rerun when healthy")


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
    print_prune(result, yes)


COMMANDS = [etcd]
