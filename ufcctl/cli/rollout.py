"""`ufcctl upgrade-drivers`, `ufcctl plan upgrade-drivers`, `ufcctl runs`, `ufcctl resume RUN_ID`."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app.inventory import load_inventory
from ufcctl.cli.fleet import Fleet, fleet_options, rollout_request, run_inventory
from ufcctl.cli.numbers import MAX_NODE_TIMEOUT, MAX_SECONDS, integer, number
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.domain.rollout.summary import RolloutSummary
from ufcctl.domain.versions import version_problem
from ufcctl.errors import InputError, RunFailed
from ufcctl.report.output import print_json
from ufcctl.report.rollout import (
    RolloutProgress,
    plan_json,
    print_plan,
    print_runs,
    print_summary,
    runs_json,
)
from ufcctl.rollout import planning
from ufcctl.rollout import runs as rollout_runs
from ufcctl.rollout.catalog import KINDS
from ufcctl.rollout.kinds import upgrade_drivers as drivers
from ufcctl.rollout.store import StateStore


def _version(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A version goes into package names and root's installer command on every node: plain words only."""
    problem = None if value is None else version_problem(value)
    if problem:
        raise InputError(f"--{param.name.replace('_', '-')} {problem}", "e.g. --version 24.1.rc3")
    return value


def summary_out(summary: RolloutSummary, output: str) -> None:
    if output == "json":
        print_json(summary.to_json())
    elif output != "quiet":  # quiet: the caller printed it (deploy's JSON holds both phases)
        print_summary(summary)
    if summary.status != "done":
        failed = [n.host for n in summary.failed]
        names = f": {', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}" if failed else ""
        why = f" ({summary.message})" if summary.message else ""
        raise RunFailed(
            f"{summary.kind} {summary.run_id} {summary.status}: {len(failed)} node(s) failed{names}{why}",
            f"fix the nodes, then `ufcctl resume {summary.run_id} --retry-failed` "
            f"(done nodes are never redone); `ufcctl runs` lists runs",
        )


@click.command("upgrade-drivers")
@inventory_option()
@fleet_options(group="npu_node", order=True, engine=True, accelerate=True)
@click.option("--version", "version", default=None, callback=_version,
              help="Driver version (default: the inventory's).")
@click.option("--firmware-version", default=None, callback=_version,
              help="Firmware version (default: the inventory's).")
@click.option("--dry-run", is_flag=True,
              help="Ansible check mode: report what would change, install nothing.")
@click.option("--force", is_flag=True,
              help="Drain nodes even when NPU pods run on them (needs a kubeconfig).")
@click.option("--retry-failed", is_flag=True,
              help="A new run over only the nodes that failed or were skipped in the newest run.")
@click.option("--node-timeout", type=integer(10, MAX_NODE_TIMEOUT),
              default=drivers.DEFAULT_NODE_TIMEOUT, show_default=True,
              help="Seconds one installer may run before the node is failed as hung.")
@output_option()
def upgrade_drivers(inventory: Path, fleet: Fleet, version: str | None, firmware_version: str | None,
                    dry_run: bool, force: bool, retry_failed: bool, node_timeout: int, output: str) -> None:
    """Upgrade the NPU driver and firmware on group npu_node of INVENTORY.

    Up to WINDOW x BATCH nodes are in flight; a node's slot goes to the next node the moment it
    finishes, so a slow node never holds back its batch. State is kept in .ufc/state.db: after a
    crash or a stop, `ufcctl resume RUN_ID` continues without redoing finished nodes.
    """
    request = rollout_request(fleet, inventory, dry_run=dry_run, force=force, options=drivers.upgrade_options(
        version=version, firmware_version=firmware_version, node_timeout=node_timeout))
    with StateStore() as store, RolloutProgress(quiet=output == "json") as progress:
        summary = rollout_runs.start(drivers.KIND, request, store, run_inventory(request), observer=progress,
                                     retry_failed=retry_failed)
    summary_out(summary, output)


@click.group("plan")
def plan() -> None:
    """Show what a command would do, touching nothing."""


@plan.command("upgrade-drivers")
@inventory_option()
@fleet_options(group="npu_node")
@click.option("--node-seconds", type=number(0.001, MAX_SECONDS), default=None,
              help="Time one node takes (default: the median of the newest measured run).")
@click.option("--all", "all_rows", is_flag=True, help="List every batch, not only the first 50.")
@output_option()
def plan_upgrade_drivers(inventory: Path, fleet: Fleet, node_seconds: float | None, all_rows: bool,
                         output: str) -> None:
    """Print the batches of an upgrade-drivers run and its projected duration."""
    request = rollout_request(fleet, inventory, options=drivers.upgrade_options())
    with StateStore() as store:
        report = planning.plan(drivers.KIND, request, store, load_inventory(request.inventory_dir),
                               node_seconds=node_seconds)
    if output == "json":
        print_json(plan_json(report.plan, report.projection, report.targets))
    else:
        print_plan(report.plan, report.projection, report.targets, all_rows=all_rows)


@click.command("runs")
@click.option("--last", "limit", type=integer(1, 10000), default=50, show_default=True,
              help="How many of the newest runs to list.")
@output_option()
def runs(limit: int, output: str) -> None:
    """List rollout runs, newest first, with node counts per state."""
    with StateStore() as store:
        records = rollout_runs.list_runs(store, limit)
    if output == "json":
        print_json(runs_json(records))
    elif records:
        print_runs(records)
    else:
        click.echo("no runs yet")


@click.command("resume")
@click.argument("run_id")
@click.option("--retry-failed", is_flag=True, help="Also run the failed and skipped nodes again.")
@click.option("--accept-inventory-change", is_flag=True,
              help="Resume although the inventory's files changed since the run began.")
@output_option()
def resume(run_id: str, retry_failed: bool, accept_inventory_change: bool, output: str) -> None:
    """Continue RUN_ID (of any kind) after a crash, Ctrl-C or budget stop; done nodes are never redone."""
    with StateStore() as store, RolloutProgress(quiet=output == "json") as progress:
        summary = rollout_runs.resume(run_id, store, kinds=KINDS, loader=load_inventory,
                                      retry_failed=retry_failed, observer=progress,
                                      accept_inventory_change=accept_inventory_change)
    summary_out(summary, output)


COMMANDS = [upgrade_drivers, plan, runs, resume]
