"""`ufcctl npu check`: every NPU node's chips and fabric on the fleet engine, changing nothing."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app import fleet as fleet_app
from ufcctl.cli.fleet import Fleet, fleet_options, progress, rollout_request
from ufcctl.cli.numbers import MAX_NODE_TIMEOUT, integer, number
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.report.rollout import summary_out
from ufcctl.rollout.kinds import npu_check as app

# 4 x 50 = 200 nodes checked at once: one module run each, no drain, no apiserver call.
DEFAULT_BATCH = 50
DEFAULT_WINDOW = 4


@click.group("npu")
def npu() -> None:
    """NPU chips and fabric on the nodes."""


@npu.command("check")
@inventory_option()
@fleet_options(group="npu_node", batch=DEFAULT_BATCH, window=DEFAULT_WINDOW, max_fail="100%")
@click.option("--deep", is_flag=True,
              help="Tier 2 too: each chip pings chip i of every other node under its ToR (npu_tor_id).")
@click.option("--ping-count", type=integer(1, 1000), default=app.DEFAULT_PING_COUNT, show_default=True,
              help="With --deep: packets per pair.")
@click.option("--max-loss", type=number(0, 100), default=0.0, show_default=True,
              help="With --deep: percent loss a pair may show before its node fails.")
@click.option("--retry-failed", is_flag=True,
              help="A new run over only the nodes that failed or were skipped in the newest check.")
@click.option("--node-timeout", type=integer(10, MAX_NODE_TIMEOUT), default=app.DEFAULT_NODE_TIMEOUT,
              show_default=True, help="Seconds after which a node is failed as hung.")
@output_option()
def check(inventory: Path, fleet: Fleet, deep: bool, ping_count: int, max_loss: float, retry_failed: bool,
          node_timeout: int, output: str) -> None:
    """Check the chips and fabric of every NPU node of INVENTORY; exit 1 when any fails.

    Per node: npu-smi's chip health and, where the host has a fabric plan, each chip through hccn_tool
    (link UP, net health Success, device IP and LLDP neighbour as planned); --deep pings the ToR peers.
    Nothing changes on the nodes or in the cluster (the node exporter's fabric metrics are refreshed).
    """
    request = rollout_request(fleet, inventory, options=app.check_options(
        deep=deep, ping_count=ping_count, max_loss=max_loss, node_timeout=node_timeout))
    summary_out(fleet_app.start(app.KIND, request, progress=progress(output), retry_failed=retry_failed),
                output)


COMMANDS = [npu]
