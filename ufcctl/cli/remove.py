"""`ufcctl remove-nodes` (workers out of the cluster, on the fleet engine) and `ufcctl reset` (a whole
cluster down, after the user typed the inventory's name)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from ufcctl.app import fleet as fleet_app
from ufcctl.app import reset as reset_app
from ufcctl.app.inventory import load_inventory
from ufcctl.cli.fleet import Fleet, fleet_options, progress, rollout_request
from ufcctl.cli.numbers import MAX_NODE_TIMEOUT, integer
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.domain.inventory.model import Inventory
from ufcctl.errors import RunFailed
from ufcctl.report.output import print_run_summary
from ufcctl.report.progress import RunProgress
from ufcctl.report.rollout import summary_out
from ufcctl.rollout.kinds import remove_control_plane, remove_nodes

# 10 nodes at a time: each drained node's pods must find room on the rest, and PodDisruptionBudgets
# allow few disruptions at once (calico-typha's: one), so a wide window mostly waits on refused
# evictions. Removing a rack (tens of nodes) takes a few drains' time; more is a flag away.
DEFAULT_BATCH = 10
DEFAULT_WINDOW = 1


@click.command("remove-nodes")
@inventory_option()
@click.option("--limit", "-l", required=True,
              help="The workers to remove (Ansible host pattern inside kube_node); control planes and etcd "
                   "members are refused unless --control-plane.")
@fleet_options(group="kube_node", batch=DEFAULT_BATCH, window=DEFAULT_WINDOW, limit=False, order=True)
@click.option("--drain-timeout", type=integer(10, MAX_NODE_TIMEOUT),
              default=remove_nodes.DEFAULT_DRAIN_TIMEOUT, show_default=True,
              help="Seconds kubectl drain may wait for one node's pods to be evicted.")
@click.option("--dry-run", is_flag=True,
              help="Ansible check mode: report what would be drained, reset and deleted; change nothing.")
@click.option("--retry-failed", is_flag=True,
              help="A new run over only the nodes that failed or were skipped in the newest removal.")
@click.option("--control-plane", is_flag=True,
              help="Remove control planes and etcd members instead (never workers), one at a time: "
                   "drain, VIP and haproxy backends, kubeadm reset, each etcd member removed with quorum "
                   "kept, data moved aside, Node deleted. Every etcd cluster must be healthy; batch and "
                   "window are 1.")
@output_option()
def remove_nodes_command(inventory: Path, limit: str, fleet: Fleet, drain_timeout: int, dry_run: bool,
                         retry_failed: bool, control_plane: bool, output: str) -> None:
    """Remove workers from the cluster: drain each (kubectl on the first control plane), kubeadm reset,
    kubelet and containerd stopped and disabled, join state wiped, Node object deleted. The NPU driver
    stays; `ufcctl add-nodes --limit ...` joins a node again. `ufcctl resume RUN_ID` continues a stopped
    run without redoing finished nodes. With --control-plane: control planes and etcd members, one at a
    time; `ufcctl deploy` joins one again."""
    check: Callable[[Inventory], None]
    if control_plane:
        kind = remove_control_plane.KIND
        request = remove_control_plane.one_at_a_time(rollout_request(
            fleet, inventory, limit=limit, dry_run=dry_run,
            options=remove_control_plane.remove_options(drain_timeout=drain_timeout)))

        def check(loaded: Inventory) -> None:  # exit 2 before the state store opens
            for line in remove_control_plane.check_removal(request, loaded):
                click.echo(line, err=True)
    else:
        kind = remove_nodes.KIND
        request = rollout_request(fleet, inventory, limit=limit, dry_run=dry_run,
                                  options=remove_nodes.remove_options(drain_timeout=drain_timeout))

        def check(loaded: Inventory) -> None:  # exit 2 before the state store is opened
            remove_nodes.refuse_cluster_hosts(loaded, limit)
    summary_out(fleet_app.start(kind, request, progress=progress(output), retry_failed=retry_failed,
                                check=check), output)



def _ask(name: str, hosts: int) -> str:
    try:
        return str(click.prompt(f"ufcctl reset takes Kubernetes and etcd down on every one of the {hosts} "
                                f"hosts of {name} (etcd data is moved aside, not deleted). Type the "
                                "inventory's name to go on", default="", show_default=False, err=True))
    except (click.exceptions.Abort, EOFError, OSError, ValueError):
        # no answer: end of input, Ctrl-C or Ctrl-D at the question, or a closed stdin (EBADF, or
        # "I/O operation on closed file"): nothing typed, so nothing is reset
        click.echo(err=True)  # the Error: line on a line of its own
        return ""


@click.command("reset")
@inventory_option()
@click.option("--check", "-C", is_flag=True,
              help="Ansible check mode: report what would be reset, change nothing (no question asked).")
@click.option("--confirm", metavar="NAME", default=None,
              help="The inventory's name, for scripts: instead of typing it at the question.")
def reset(inventory: Path, check: bool, confirm: str | None) -> None:
    """Reset the whole cluster of INVENTORY: every node's kubeadm reset, kubelet and containerd stopped and
    disabled, join state wiped; every etcd member stopped, its data directory moved aside (never deleted).
    Asks for the inventory's name first; a wrong name exits 2 and touches nothing."""
    loaded = load_inventory(inventory)
    hosts = reset_app.reset_hosts(loaded, inventory)
    if confirm is not None or not check:
        typed = confirm if confirm is not None else _ask(reset_app.inventory_label(inventory), len(hosts))
        reset_app.check_confirmation(inventory, typed)
    with RunProgress() as progress:
        result = reset_app.reset_cluster(loaded, hosts, check=check, observer=progress)
    print_run_summary(result)
    if not result.succeeded:
        failed = result.failed_hosts
        raise RunFailed(f"reset {result.status} on {len(failed)} of {len(result.hosts)} host(s)"
                        + (f": {', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}" if failed else ""),
                        f"details in {result.run_dir}/failures.jsonl; fix and run it again (each step is "
                        "idempotent)")


COMMANDS = [remove_nodes_command, reset]
