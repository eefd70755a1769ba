"""`ufcctl remove-nodes`: take workers out of the cluster on the fleet engine."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.cli.fleet import Fleet, fleet_options, rollout_request, run_inventory
from ufcctl.cli.numbers import MAX_NODE_TIMEOUT, integer
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.cli.rollout import summary_out
from ufcctl.report.rollout import RolloutProgress
from ufcctl.rollout import runs
from ufcctl.rollout.kinds import remove_nodes
from ufcctl.rollout.store import StateStore

# 10 nodes at a time: each drained node's pods must find room on the rest, and PodDisruptionBudgets
# allow few disruptions at once (calico-typha's: one), so a wide window mostly waits on refused
# evictions. Removing a rack (tens of nodes) takes a few drains' time; more is a flag away.
DEFAULT_BATCH = 10
DEFAULT_WINDOW = 1


@click.command("remove-nodes")
@inventory_option()
@click.option("--limit", "-l", required=True,
              help="The workers to remove (Ansible host pattern inside kube_node); control planes and etcd "
                   "members are refused.")
@fleet_options(group="kube_node", batch=DEFAULT_BATCH, window=DEFAULT_WINDOW, limit=False, order=True)
@click.option("--drain-timeout", type=integer(10, MAX_NODE_TIMEOUT),
              default=remove_nodes.DEFAULT_DRAIN_TIMEOUT, show_default=True,
              help="Seconds kubectl drain may wait for one node's pods to be evicted.")
@click.option("--dry-run", is_flag=True,
              help="Ansible check mode: report what would be drained, reset and deleted; change nothing.")
@click.option("--retry-failed", is_flag=True,
              help="A new run over only the nodes that failed or were skipped in the newest removal.")
@output_option()
def remove_nodes_command(inventory: Path, limit: str, fleet: Fleet, drain_timeout: int, dry_run: bool,
                         retry_failed: bool, output: str) -> None:
    """Remove workers from the cluster: drain each (kubectl on the first control plane), kubeadm reset,
    kubelet and containerd stopped and disabled, join state wiped, Node object deleted. The NPU driver
    stays; `ufcctl add-nodes --limit ...` joins a node again. `ufcctl resume RUN_ID` continues a stopped
    run without redoing finished nodes."""
    request = rollout_request(fleet, inventory, limit=limit, dry_run=dry_run,
                              options=remove_nodes.remove_options(drain_timeout=drain_timeout))
    loaded = run_inventory(request)
    remove_nodes.refuse_cluster_hosts(loaded, limit)  # exit 2 before the state store is opened
    with StateStore() as store, RolloutProgress(quiet=output == "json") as progress:
        summary = runs.start(remove_nodes.KIND, request, store, loaded, observer=progress,
                             retry_failed=retry_failed)
    summary_out(summary, output)


COMMANDS = [remove_nodes_command]
