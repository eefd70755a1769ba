"""`ufcctl upgrade-drivers`, `ufcctl plan upgrade-drivers`, `ufcctl runs`, `ufcctl resume RUN_ID`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ufcctl.cli.numbers import MAX_COUNT, MAX_NODE_TIMEOUT, MAX_SECONDS, integer, number, percent
from ufcctl.cli.options import accelerate_option, inventory_option, output_option
from ufcctl.domain.rollout.order import ORDERS
from ufcctl.domain.rollout.plan import ALIGN_VARS
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
from ufcctl.rollout import runs as rollout_runs
from ufcctl.rollout.kind import DEFAULT_CHUNK
from ufcctl.rollout.kinds import upgrade_drivers as app
from ufcctl.rollout.store import StateStore


def _version(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A version goes into package names and root's installer command on every node: plain words only."""
    problem = None if value is None else version_problem(value)
    if problem:
        raise InputError(f"--{param.name.replace('_', '-')} {problem}", "e.g. --version 24.1.rc3")
    return value


def fleet_options(*, group: str, batch: int | None = None, window: int = 1,
                  limit: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The fleet flags every rollout command shares (declared once): batch, window, budget, canary,
    alignment, and (limit=True) --limit inside `group`. batch None: --batch is required."""
    batch_help = "Nodes per batch: the unit of planning, alignment, canary and the budget's floor."

    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        options = [
            click.option("--batch", "-b", type=integer(1, 10000), required=batch is None, default=batch,
                         show_default=batch is not None, help=batch_help),
            click.option("--window", "-w", type=integer(1, 100), default=window, show_default=True,
                         help="Batches' worth of nodes in flight at once (window x batch node slots)."),
            click.option("--max-fail", type=percent(), default="0%", show_default=True,
                         help="Stop starting nodes once failed nodes exceed this share of processed ones "
                              "(measured against at least one batch)."),
            click.option("--canary", type=integer(0, MAX_COUNT), default=0, show_default=True,
                         help="Nodes run first, alone; any failure among them stops the rollout."),
            click.option("--by", "align", type=click.Choice(list(ALIGN_VARS)), default="none",
                         show_default=True, help="Cut batches along ToR switches or super pods "
                                                 "(npu_tor_id / npu_super_pod_id)."),
        ]
        if limit:
            options.append(click.option("--limit", "-l", default=None,
                                        help=f"Ansible host pattern inside group {group}."))
        for option in reversed(options):
            func = option(func)
        return func

    return apply


def order_option() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--order of every rollout command."""
    return click.option("--order", type=click.Choice(list(ORDERS)), default="longest", show_default=True,
                        help="Start order after the canary: longest expected first (node times of earlier "
                             "runs), or the plan's order.")


def _plan_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Flags shared by upgrade-drivers and plan upgrade-drivers."""
    return inventory_option()(fleet_options(group="npu_node")(func))


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
@_plan_options
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
@click.option("--node-timeout", type=integer(10, MAX_NODE_TIMEOUT), default=app.DEFAULT_NODE_TIMEOUT,
              show_default=True, help="Seconds one installer may run before the node is failed as hung.")
@order_option()
@click.option("--forks", type=integer(1, 1000), default=None,
              help="Parallel hosts per Ansible process (default: WINDOW x BATCH plus a few to start next).")
@click.option("--chunk-size", type=integer(1, 100000), default=DEFAULT_CHUNK, show_default=True,
              help="Nodes per long-lived Ansible process.")
@accelerate_option()
@output_option()
def upgrade_drivers(inventory: Path, batch: int, window: int, max_fail: float, canary: int, align: str,
                    limit: str | None, version: str | None, firmware_version: str | None, dry_run: bool,
                    force: bool, retry_failed: bool, node_timeout: int, order: str, forks: int | None,
                    chunk_size: int, accelerate: str | None, output: str) -> None:
    """Upgrade the NPU driver and firmware on group npu_node of INVENTORY.

    Up to WINDOW x BATCH nodes are in flight; a node's slot goes to the next node the moment it
    finishes, so a slow node never holds back its batch. State is kept in .ufc/state.db: after a
    crash or a stop, `ufcctl resume RUN_ID` continues without redoing finished nodes.
    """
    request = app.upgrade_request(
        inventory_dir=inventory, batch=batch, window=window, max_fail=max_fail, canary=canary, align=align,
        version=version, firmware_version=firmware_version, limit=limit, dry_run=dry_run, force=force,
        node_timeout=node_timeout, forks=forks, accelerate=accelerate, order=order, chunk_size=chunk_size,
    )
    with StateStore() as store, RolloutProgress(quiet=output == "json") as progress:
        summary = app.upgrade(request, store, observer=progress, retry_failed=retry_failed)
    summary_out(summary, output)


@click.group("plan")
def plan() -> None:
    """Show what a command would do, touching nothing."""


@plan.command("upgrade-drivers")
@_plan_options
@click.option("--node-seconds", type=number(0.001, MAX_SECONDS), default=None,
              help="Time one node takes (default: the median of the newest measured run).")
@click.option("--all", "all_rows", is_flag=True, help="List every batch, not only the first 50.")
@output_option()
def plan_upgrade_drivers(inventory: Path, batch: int, window: int, max_fail: float, canary: int, align: str,
                         limit: str | None, node_seconds: float | None, all_rows: bool, output: str) -> None:
    """Print the batches of an upgrade-drivers run and its projected duration."""
    request = app.upgrade_request(inventory_dir=inventory, batch=batch, window=window, max_fail=max_fail,
                                 canary=canary, align=align, limit=limit)
    with StateStore() as store:
        report = app.plan_upgrade(request, store, node_seconds=node_seconds)
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
        summary = rollout_runs.resume(run_id, store, retry_failed=retry_failed, observer=progress,
                                      accept_inventory_change=accept_inventory_change)
    summary_out(summary, output)


COMMANDS = [upgrade_drivers, plan, runs, resume]
