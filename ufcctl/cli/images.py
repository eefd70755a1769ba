"""`ufcctl images preheat`: pull images onto the workers on the fleet engine, caches first."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app import fleet as fleet_app
from ufcctl.cli.fleet import Fleet, fleet_options, progress, rollout_request
from ufcctl.cli.numbers import MAX_NODE_TIMEOUT, MAX_SECONDS, integer, number
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.report.images import PreheatPlan, preheat_plan_json, print_preheat_plan
from ufcctl.report.output import print_json
from ufcctl.report.rollout import summary_out
from ufcctl.rollout.kinds import preheat_images as app

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
@fleet_options(group="kube_node", batch=DEFAULT_BATCH, window=DEFAULT_WINDOW, order=True, accelerate=True)
@click.option("--dry-run", is_flag=True,
              help="Print the batches and the expected upstream traffic; contact no node or cache.")
@click.option("--node-seconds", type=number(0.001, MAX_SECONDS), default=None,
              help="With --dry-run: time one node takes (default: the median of the newest measured run).")
@click.option("--retry-failed", is_flag=True,
              help="A new run over only the nodes that failed or were skipped in the newest preheat.")
@click.option("--node-timeout", type=integer(60, MAX_NODE_TIMEOUT), default=app.DEFAULT_NODE_TIMEOUT,
              show_default=True,
              help="Seconds after which a node (and one pull on it) is failed as hung.")
@output_option()
def preheat(inventory: Path, image_refs: tuple[str, ...], fleet: Fleet, dry_run: bool,
            node_seconds: float | None, retry_failed: bool, node_timeout: int, output: str) -> None:
    """Pull IMAGE... into containerd (k8s.io) on the workers of INVENTORY, registry caches first.

    The caches serving the targets fetch each image once from upstream; then up to WINDOW x BATCH
    workers pull through their mirrors (ToR cache, super pod cache, upstream). `ufcctl resume RUN_ID`
    continues a stopped run without redoing finished nodes.
    """
    request = rollout_request(fleet, inventory,
                              options=app.preheat_options(images=image_refs, node_timeout=node_timeout))
    if dry_run:
        plan = fleet_app.with_inventory(request, lambda store, loaded: app.dry_run(
            request, store, loaded, node_seconds=node_seconds))
        if output == "json":
            print_json(preheat_plan_json(_preheat_plan(plan)))
        else:
            print_preheat_plan(_preheat_plan(plan))
        return
    summary_out(fleet_app.start(app.KIND, request, progress=progress(output), retry_failed=retry_failed),
                output)


COMMANDS = [images]
