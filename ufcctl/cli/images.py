"""`ufcctl images preheat`: pull images onto the workers on the fleet engine, caches first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ufcctl.app.inventory import load_inventory
from ufcctl.cli.fleet import Fleet, fleet_options, rollout_request, run_inventory
from ufcctl.cli.numbers import MAX_NODE_TIMEOUT, MAX_SECONDS, integer, number
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.cli.rollout import summary_out
from ufcctl.report.output import human_bytes, print_json
from ufcctl.report.rollout import RolloutProgress, plan_json, print_plan
from ufcctl.rollout import runs
from ufcctl.rollout.kinds import preheat_images as app
from ufcctl.rollout.store import StateStore

# 2 x 50 = 100 workers pulling at once: with caches each ToR cache serves its few dozen nodes; the
# window bounds the controller's forks as for add-nodes.
DEFAULT_BATCH = 50
DEFAULT_WINDOW = 2
# Measured in the lab (molecule/image_preheat): docker-registry 2.8 as a pull-through cache GETs a
# missing blob twice from its upstream (one stream to the client, one to store it).
CACHE_MISS_NOTE = ("docker-registry 2.8 pull-through caches fetch each missing blob twice from upstream, "
                   "so the caches may draw up to twice this")


@click.group("images")
def images() -> None:
    """Container images on the workers."""


def _dry_run_json(plan: app.DryRun) -> dict[str, Any]:
    known = [t.total for t in plan.traffic if t.total is not None]
    return {**plan_json(plan.report.plan, plan.report.projection, plan.report.targets),
            "caches_serving": plan.caches.caches, "caches_total": plan.caches.all_caches,
            "upstream_traffic": [{"image": t.image, "size": t.size, "pulls": t.pulls, "via": t.via,
                                  "bytes": t.total, "why_unknown": plan.why_unknown.get(t.image)}
                                 for t in plan.traffic],
            "upstream_bytes_known": sum(known), "upstream_bytes_complete": len(known) == len(plan.traffic),
            "note": CACHE_MISS_NOTE if any(t.via == "caches" for t in plan.traffic) else None}


def _print_dry_run(plan: app.DryRun) -> None:
    print_plan(plan.report.plan, plan.report.projection, plan.report.targets)
    caches = plan.caches
    click.echo(f"registry caches: {len(caches.caches)} of {caches.all_caches} serve at least one target node"
               + (" (nodes pull from upstream directly)" if not caches.caches else ""))
    click.echo("expected upstream traffic (nothing was contacted but the upstreams' manifests):")
    for row in plan.traffic:
        unit = "cache(s)" if row.via == "caches" else "node(s), no cache for its registry" \
            if caches.caches else "node(s)"
        total = f" = {human_bytes(row.total)}" if row.total is not None else ""
        why = f" ({plan.why_unknown[row.image]})" if row.image in plan.why_unknown else ""
        size = "unknown size" if row.size is None else human_bytes(row.size)
        click.echo(f"  {row.image}: {size}{why} x {row.pulls} {unit}{total}")
    known = sum(t.total or 0 for t in plan.traffic)
    missing = sum(1 for t in plan.traffic if t.total is None)
    click.echo(f"total: {human_bytes(known)}" + (f" + {missing} image(s) of unknown size" if missing else ""))
    if any(t.via == "caches" for t in plan.traffic):
        click.echo(f"note: {CACHE_MISS_NOTE}")


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
        with StateStore() as store:
            plan = app.dry_run(request, store, load_inventory(request.inventory_dir),
                               node_seconds=node_seconds)
        if output == "json":
            print_json(_dry_run_json(plan))
        else:
            _print_dry_run(plan)
        return
    with StateStore() as store, RolloutProgress(quiet=output == "json") as progress:
        summary = runs.start(app.KIND, request, store, run_inventory(request), observer=progress,
                             retry_failed=retry_failed)
    summary_out(summary, output)


COMMANDS = [images]
