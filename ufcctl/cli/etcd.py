"""`ufcctl etcd status|defrag|prune|backup|restore|member replace`: flags and printing for the etcd
maintenance use cases."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app.etcd_backup import DEFAULT_BUMP, etcd_backup, etcd_restore
from ufcctl.app.etcd_maint import STATUS_TIMEOUT, etcd_defrag, etcd_prune, etcd_status
from ufcctl.app.etcd_member import etcd_member_replace
from ufcctl.cli import numbers
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.errors import RunFailed
from ufcctl.report.etcd import StatusProgress, print_defrag, print_etcd_status, print_prune
from ufcctl.report.output import print_json

CLUSTERS = click.Choice(["core", "events", "pods"])


@click.group()
def etcd() -> None:
    """Status, maintenance, snapshots and restore of the three etcd clusters (core, events, pods)."""


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


@etcd.command()
@inventory_option()
@click.option("--cluster", type=CLUSTERS, default=None, help="Only this cluster (default: all three).")
@click.option(
    "--dest", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Directory for <cluster>/<cluster>-<UTC time>.db and its .sha256 (default: .ufc/backups/etcd).",
)
@output_option()
def backup(inventory: Path, cluster: str | None, dest: Path | None, output: str) -> None:
    """Take a snapshot of each cluster now, onto this machine: streamed from a healthy follower through
    etcd's gateway, checked against etcd's sha256 trailer, with a .sha256 beside it.

    The members also take one every hour themselves (etcd_backup_* in roles/etcd).
    """
    snapshots = etcd_backup(inventory, cluster, dest, log=lambda line: click.echo(line, err=output == "json"))
    if output == "json":
        print_json([s.to_json() for s in snapshots])


@etcd.command()
@inventory_option()
@click.option("--cluster", type=CLUSTERS, required=True, help="The cluster to rebuild.")
@click.option(
    "--from", "source", type=click.Path(dir_okay=False, exists=True, path_type=Path), required=True,
    help="The snapshot (`ufcctl etcd backup`, a member's timer, or `etcdctl snapshot save`).",
)
@click.option(
    "--bump-revision", type=numbers.integer(0, 10**12), default=DEFAULT_BUMP, show_default=True,
    help="Raise the restored revision by this much and mark it compacted, so no watch cache or informer "
    "sees a revision twice (0: neither; only for a cluster no Kubernetes client ever read).",
)
@click.option(
    "--i-know-it-is-another-cluster", "other_cluster", is_flag=True,
    help="Restore a snapshot whose file name or directory says it holds another cluster (misfiled).",
)
@output_option()
def restore(inventory: Path, cluster: str, source: Path, bump_revision: int, other_cluster: bool,
            output: str) -> None:
    """Rebuild a lost cluster from one snapshot: every kube-apiserver stopped, every member restored
    with a new cluster token and the revision bumped, started, checked, the apiservers started again.

    Refuses, before anything is stopped: a snapshot that is no regular file, no bbolt database, fails its
    checksums or is filed as another cluster's (name or directory, also behind a link), and a cluster
    where anything still answers at a member's client or peer URL (TCP accepted, a TLS failure included).
    Every member then reads the copied snapshot with the restore tool before any apiserver stops.
    The old data directories are kept beside the new ones (<data_dir>.before-restore-<time>).
    """
    result = etcd_restore(inventory, cluster, source, bump_revision,
                          log=lambda line: click.echo(line, err=output == "json"),
                          other_cluster=other_cluster)
    if output == "json":
        print_json(result.to_json())
        return
    print_etcd_status([result.status])
    click.echo(f"restored cluster {cluster} from {result.snapshot} in {result.seconds:.0f} s "
               f"(token {result.token}, revision bumped by {result.bump_revision})")


@etcd.group()
def member() -> None:
    """Membership changes, one member at a time."""


@member.command()
@inventory_option()
@click.option("--cluster", type=CLUSTERS, required=True, help="The cluster the member belongs to.")
@click.option("--member", "host", required=True, help="The member's inventory host name.")
def replace(inventory: Path, cluster: str, host: str) -> None:
    """Replace one dead or broken member: stopped, its data kept aside, removed from the cluster, and
    joined again empty by roles/etcd (new member id), synced from the leader.

    Refuses a healthy member and a cluster that would lose quorum (then: `ufcctl etcd restore`).
    """
    status = etcd_member_replace(inventory, cluster, host, log=click.echo)
    print_etcd_status([status])
    click.echo(f"member {host} of cluster {cluster} replaced")


COMMANDS = [etcd]
