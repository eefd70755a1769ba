"""`ufcctl images preheat`: pull images onto the workers on the fleet engine, caches first."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.cli.numbers import MAX_NODE_TIMEOUT, MAX_SECONDS, integer, number
from ufcctl.cli.options import accelerate_option, inventory_option, output_option
from ufcctl.cli.rollout import fleet_options, order_option, summary_out
from ufcctl.report.images import PreheatPlan, preheat_plan_json, print_preheat_plan
from ufcctl.report.output import print_json
from ufcctl.report.rollout import RolloutProgress
from ufcctl.rollout.kinds import preheat_images as app
from ufcctl.rollout.store import StateStore

# 2 x 50 = 100 workers pulling at once: with caches each ToR cache serves its few dozen nodes; the
# window bounds the controller's forks as for add-nodes.
DEFAULT_BATCH = 50
DEFAULT_WINDOW = 2


@click.group("images")
def images() -> None:
    """Container images on the workers."""


def _preheat_plan(plan: app.DryRun) -> PreheatPlan:
    return PreheatPlan(plan.report.plan, plan.report.projection, plan.report.targets, plan.caches.caches,
                       plan.caches.all_caches, plan.traffic, plan.why_unknown)


@images.command("preheat")
@inventory_option()
@click.argument("image_refs", metavar="IMAGE...", nargs=-1)
@fleet_options(group="kube_node", batch=DEFAULT_BATCH, window=DEFAULT_WINDOW)
@click.option("--dry-run", is_flag=True,
              help="Print the batches and the expected upstream traffic; contact no node or cache.")
@click.option("--node-seconds", type=number(0.001, MAX_SECONDS), default=None,
              help="With --dry-run: time one node takes (default: the median of the newest measured run).")
@click.option("--retry-failed", is_flag=True,
              help="A new run over only the nodes that failed or were skipped in the newest preheat.")
@click.option("--node-timeout", type=integer(60, MAX_NODE_TIMEOUT), default=app.DEFAULT_NODE_TIMEOUT,
              show_default=True,
              help="Seconds after which a node (and one pull on it) is failed as hung.")
@order_option()
@accelerate_option()
@output_option()
def preheat(inventory: Path, image_refs: tuple[str, ...], batch: int, window: int, max_fail: float,
            canary: int, align: str, limit: str | None, dry_run: bool, node_seconds: float | None,
            retry_failed: bool, node_timeout: int, order: str, accelerate: str | None, output: str) -> None:
    """Pull IMAGE... into containerd (k8s.io) on the workers of INVENTORY, registry caches first.

    The caches serving the targets fetch each image once from upstream; then up to WINDOW x BATCH
    workers pull through their mirrors (ToR cache, super pod cache, upstream). `ufcctl resume RUN_ID`
    continues a stopped run without redoing finished nodes.
    """
    request = app.preheat_request(
        images=image_refs, inventory_dir=inventory, batch=batch, window=window, max_fail=max_fail,
        canary=canary, align=align, limit=limit, order=order, accelerate=accelerate,
        node_timeout=node_timeout)
    if dry_run:
        with StateStore() as store:
            plan = app.dry_run(request, store, node_seconds=node_seconds)
        if output == "json":
            print_json(preheat_plan_json(_preheat_plan(plan)))
        else:
            print_preheat_plan(_preheat_plan(plan))
        return
    with StateStore() as store, RolloutProgress(quiet=output == "json") as progress:
        summary = app.preheat(request, store, observer=progress, retry_failed=retry_failed)
    summary_out(summary, output)


COMMANDS = [images]
