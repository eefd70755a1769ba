"""`ufcctl upgrade-drivers`, `ufcctl plan upgrade-drivers`, `ufcctl runs`, `ufcctl resume RUN_ID`."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app import fleet as fleet_app
from ufcctl.cli.fleet import Fleet, fleet_options, progress, rollout_request
from ufcctl.cli.numbers import MAX_NODE_TIMEOUT, MAX_SECONDS, integer, number
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.domain.versions import version_problem
from ufcctl.errors import InputError
from ufcctl.report.output import print_json
from ufcctl.report.rollout import (
    plan_json,
    print_plan,
    print_runs,
    runs_json,
    summary_out,
)
from ufcctl.rollout.kinds import upgrade_drivers as drivers


def _version(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A version goes into package names and root's installer command on every node: plain words only."""
    problem = None if value is None else version_problem(value)
    if problem:
        raise InputError(f"--{param.name.replace('_', '-')} {problem}", "e.g. --version 24.1.rc3")
    return value


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
    summary_out(fleet_app.start(drivers.KIND, request, progress=progress(output), retry_failed=retry_failed),
                output)


@click.command("upgrade-drivers")
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
    report = fleet_app.plan(drivers.KIND, request, node_seconds=node_seconds)
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
    records = fleet_app.list_runs(limit)
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
    summary_out(fleet_app.resume(run_id, progress=progress(output), retry_failed=retry_failed,
                                 accept_inventory_change=accept_inventory_change), output)


COMMANDS = [upgrade_drivers, runs, resume]
PLAN_COMMANDS = [plan_upgrade_drivers]  # under `ufcctl plan` (cli/main.py)
