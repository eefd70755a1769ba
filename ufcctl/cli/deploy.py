"""`ufcctl deploy` (cluster phase, then the node phase on the fleet engine), `ufcctl add-nodes`,
`ufcctl plan deploy`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ufcctl.app import fleet as fleet_app
from ufcctl.app.deploy import PHASES, DeployResult, is_lab_inventory
from ufcctl.app.deploy import deploy as run_deploy
from ufcctl.app.readiness import DEFAULT_READY_TIMEOUT
from ufcctl.cli.fleet import Fleet, fleet_options, progress, rollout_request
from ufcctl.cli.numbers import MAX_NODE_TIMEOUT, MAX_SECONDS, integer, number
from ufcctl.cli.options import forks_option, inventory_option, output_option
from ufcctl.domain.readiness import ApiView
from ufcctl.domain.rollout.pacing import paced_seconds
from ufcctl.engine.runner import RunOptions
from ufcctl.errors import InputError, RunFailed
from ufcctl.report.output import print_json, print_run_summary
from ufcctl.report.progress import RunProgress
from ufcctl.report.rollout import plan_json, print_plan, summary_out
from ufcctl.rollout.kinds import deploy_nodes

# Node phase defaults: 2 x 50 = 100 workers in flight. Each in-flight node holds one Ansible fork on
# the controller (about 100 MB, --forks' help), so the window, not the join rate, bounds the
# controller's memory: ~11 GB at the default. A larger controller raises --batch/--window; the join
# rate (--join-rate) stays the apiservers' guard whatever the window (`ufcctl plan deploy` shows both).
DEFAULT_BATCH = 50
DEFAULT_WINDOW = 2


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(t.strip() for v in values for t in v.split(",") if t.strip())


def _filters(limit: str | None, options: RunOptions) -> str:
    used = [f"{flag} {','.join(values)}" for flag, values in
            (("--tags", options.tags), ("--skip-tags", options.skip_tags)) if values]
    if limit is not None:
        used.append(f"--limit {limit}")
    return f" ({'; '.join(used)})" if used else ""


def _full_option() -> Any:
    """The node phase's --full (deploy and add-nodes): no fast path for nodes at target."""
    return click.option("--full", is_flag=True,
                        help="Run every role on every worker, also where the node's record of its last full "
                             "run says it is at target (the fast path; e.g. after editing a node by hand).")


def _node_timeout_option() -> Any:
    """The node phase's own --node-timeout (deploy and add-nodes)."""
    return click.option("--node-timeout", type=integer(60, MAX_NODE_TIMEOUT),
                        default=deploy_nodes.DEFAULT_NODE_TIMEOUT, show_default=True,
                        help="Seconds after which a worker with no result is failed as hung.")


@click.command()
@inventory_option()
@click.option("--limit", "-l", default=None, help="Ansible host pattern; only these hosts are run.")
@click.option("--phase", type=click.Choice(PHASES), default="all", show_default=True,
              help="cluster: playbooks/deploy.yml only; nodes: the workers only (as add-nodes); all: both.")
@click.option("--tags", "-t", multiple=True,
              help="Only tasks with these tags (cluster phase; comma list or repeated).")
@click.option("--skip-tags", multiple=True, help="Skip tasks with these tags (cluster phase).")
@click.option("--check", "-C", is_flag=True, help="Ansible check mode: report what would change.")
@click.option("--diff", "-D", is_flag=True, help="Show file differences.")
@fleet_options(group="kube_node", batch=DEFAULT_BATCH, window=DEFAULT_WINDOW, limit=False, join_rate=True,
               order=True, accelerate=True)
@_node_timeout_option()
@_full_option()
@forks_option()
@click.option("-v", "--verbose", count=True, help="Ansible verbosity (repeat for more).")
@click.option("--allow-skips", is_flag=True,
              help="Exit 0 even when a step a production cluster needs was SKIPPED (no kubectl, no "
                   "kubeconfig, no join token, no NPU driver); they are still listed. Lab inventories allow "
                   "them.")
@click.option("--ready-timeout", type=integer(0, int(MAX_SECONDS)), default=DEFAULT_READY_TIMEOUT,
              show_default=True,
              help="Seconds to wait, after the last phase, until every Node is Ready and every add-on "
                   "workload has its pods available (read through KUBECONFIG or ~/.kube/config); "
                   "0: do not wait.")
@output_option()
def deploy(
    inventory: Path, limit: str | None, phase: str, tags: tuple[str, ...], skip_tags: tuple[str, ...],
    check: bool, diff: bool, fleet: Fleet, node_timeout: int, full: bool, forks: int, verbose: int,
    allow_skips: bool, ready_timeout: int, output: str,
) -> None:
    """Deploy the stack onto INVENTORY: the cluster phase (playbooks/deploy.yml: etcd, VIP, control
    plane, NFS, add-ons), then the node phase (playbooks/deploy-nodes.yml: every worker joins, through
    the fleet engine: batches, window, failure budget, pacing; `ufcctl resume RUN_ID` after a stop),
    then a wait until every Node is Ready and every add-on workload available (exit 1 when time runs
    out, naming what is not; not in --check, not after --phase cluster)."""
    options = RunOptions(
        forks=forks, check=check, diff=diff, tags=_split(tags), skip_tags=_split(skip_tags),
        accelerate=fleet.accelerate, verbosity=verbose,
    )
    nodes = rollout_request(fleet, inventory, limit=limit, dry_run=check,
                            options=deploy_nodes.nodes_options(node_timeout=node_timeout, full=full))
    quiet = output == "json"
    result = run_deploy(inventory, options, limit=limit, phase=phase, nodes=nodes,
                        progress=lambda: RunProgress(quiet=quiet),
                        rollout_progress=progress(output),
                        ready_timeout=ready_timeout, on_ready_read=_ready_progress(quiet))
    _report(result, limit, options, output)
    skipped = _skipped_steps(result, inventory, check=check, allowed=allow_skips, output=output)
    _ready(result, inventory, output)
    if skipped is not None:
        raise skipped


def _ready_progress(quiet: bool) -> Callable[[ApiView], None]:
    """A line on stderr whenever the readiness wait's picture changes (not once per read: 30 min of them)."""
    shown = [""]

    def show(view: ApiView) -> None:
        line = "; ".join(view.problems(3)) or (view.readiness.summary() if view.readiness else "")
        if not quiet and line != shown[0]:
            click.echo(f"waiting for the cluster ({view.seconds:.0f} s): {line}", err=True)
        shown[0] = line
    return show


def _ready(result: DeployResult, inventory: Path, output: str) -> None:
    """The readiness wait's verdict: a line when it worked, exit 1 naming what is not when time ran out."""
    view = result.ready
    if view is None:
        return
    if view.ok:
        if output != "json" and view.readiness is not None:
            click.echo(f"cluster ready: {view.readiness.summary()} (read through {view.source}, "
                       f"{view.seconds:.0f} s)")
        return
    raise RunFailed(f"cluster not ready after {view.seconds:.0f} s: {'; '.join(view.problems(5))}",
                    f"`kubectl describe` the objects named; `ufcctl health --inventory {inventory}` shows "
                    "the whole list; a rollout still under way needs a larger --ready-timeout")


def _skipped_steps(result: DeployResult, inventory: Path, *, check: bool, allowed: bool,
                   output: str) -> RunFailed | None:
    """No silent success: list every step a role reported SKIPPED; a real (not --check) deploy that
    skipped any fails (the error returned, raised by the caller), unless the inventory is a lab's or
    --allow-skips says the operator accepts it."""
    steps = result.skipped_steps
    if not steps:
        return None
    if output != "json":
        click.echo(f"SKIPPED steps ({len(steps)}): a production cluster needs each of them", err=True)
        for line in steps[:50]:
            click.echo(f"  {line}", err=True)
        if len(steps) > 50:
            click.echo(f"  ... and {len(steps) - 50} more (--output json lists all)", err=True)
    if check or allowed or is_lab_inventory(inventory):
        return None
    return RunFailed(f"deploy skipped {len(steps)} step(s) a production cluster needs (listed above)",
                     "give the control planes kubectl and a kubeconfig, the workers a join token and a "
                     "driver, and rerun; or pass --allow-skips to accept them")


def _report(result: DeployResult, limit: str | None, options: RunOptions, output: str) -> None:
    if output == "json":
        print_json(result.to_json())
    cluster = result.cluster
    if cluster is not None and output != "json":
        print_run_summary(cluster)
        if cluster.rc != 0 and not cluster.hosts and cluster.output_tail:
            click.echo("Ansible said:\n  " + "\n  ".join(cluster.output_tail[-15:]), err=True)
    for line in result.skipped:
        click.echo(f"skipped: {line}", err=True)
    if cluster is None and result.nodes is None:
        raise InputError(f"deploy ran nothing{_filters(limit, options)}: " + "; ".join(result.skipped),
                         "choose hosts and tags of the phase to run (ufcctl add-nodes joins workers)")
    if cluster is not None and cluster.succeeded and cluster.nothing_ran and result.nodes is None:
        # Exit 2, not 0: nothing was deployed, and automation reading 0 would take the stack as
        # installed. Not 1 either: no host failed; the selection (flags or inventory groups)
        # matched no task, so the input is what to fix, as for any other bad flag.
        raise InputError(
            f"deploy ran no task on any of its {len(cluster.hosts) + len(cluster.not_run)} host(s)"
            f"{_filters(limit, options)}: nothing was deployed",
            ("the tags chosen select no task of the plays that target these hosts' groups"
             if options.tags or options.skip_tags else "no play targets these hosts' groups, or every "
             "task was skipped") + "; see the plays and their groups in playbooks/deploy.yml",
        )
    if cluster is not None and not cluster.succeeded:
        failed = cluster.failed_hosts
        raise RunFailed(
            f"deploy {cluster.status} on {len(failed)} of {len(cluster.hosts)} host(s)"
            + (f": {', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}" if failed else ""),
            f"details in {cluster.run_dir}/failures.jsonl; fix and rerun (roles are idempotent)",
        )
    if result.nodes is not None:
        summary_out(result.nodes, "text" if output != "json" else "quiet")


@click.command("add-nodes")
@inventory_option()
@click.option("--limit", "-l", required=True,
              help="The new workers (Ansible host pattern inside kube_node); nothing else is contacted "
                   "but the first control plane, for the join token.")
@click.option("--check", "-C", is_flag=True, help="Ansible check mode: report what would change.")
@click.option("--retry-failed", is_flag=True,
              help="A new run over only the nodes that failed or were skipped in the newest node phase.")
@fleet_options(group="kube_node", batch=DEFAULT_BATCH, window=DEFAULT_WINDOW, limit=False, join_rate=True,
               order=True, accelerate=True)
@_node_timeout_option()
@_full_option()
@output_option()
def add_nodes(inventory: Path, limit: str, check: bool, retry_failed: bool, fleet: Fleet, node_timeout: int,
              full: bool, output: str) -> None:
    """Add workers to a running cluster: the node phase of deploy on --limit only, never the cluster plays."""
    request = rollout_request(fleet, inventory, limit=limit, dry_run=check,
                              options=deploy_nodes.nodes_options(node_timeout=node_timeout, full=full))
    # the kind's version guard: a new node's kubelet must not be newer than the apiservers
    summary_out(fleet_app.start(deploy_nodes.KIND, request, progress=progress(output),
                                retry_failed=retry_failed), output)


@click.command("deploy")
@inventory_option()
@fleet_options(group="kube_node", batch=DEFAULT_BATCH, window=DEFAULT_WINDOW, join_rate=True)
@click.option("--node-seconds", type=number(0.001, MAX_SECONDS), default=None,
              help="Time one worker takes (default: the median of the newest measured node phase).")
@click.option("--all", "all_rows", is_flag=True, help="List every batch, not only the first 50.")
@output_option()
def plan_deploy(inventory: Path, fleet: Fleet, node_seconds: float | None, all_rows: bool,
                output: str) -> None:
    """Print the node phase's batches and projected duration (the cluster phase runs once, before it)."""
    request = rollout_request(fleet, inventory, options=deploy_nodes.nodes_options())
    report = fleet_app.plan(deploy_nodes.KIND, request, node_seconds=node_seconds)
    pacing = paced_seconds(report.targets, request.rate)
    if output == "json":
        print_json({**plan_json(report.plan, report.projection, report.targets),
                    "join_rate": request.rate, "pacing_floor_seconds": round(pacing, 1)})
        return
    print_plan(report.plan, report.projection, report.targets, all_rows=all_rows)
    if request.rate is not None:
        click.echo(f"join pacing: {report.targets} workers at {request.rate:g}/s start over at least "
                   f"{pacing / 60:.1f} min (the node phase takes the longer of this and the projection)")


COMMANDS = [deploy, add_nodes]
PLAN_COMMANDS = [plan_deploy]  # under `ufcctl plan` (cli/main.py)
