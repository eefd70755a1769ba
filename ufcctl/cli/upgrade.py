"""`ufcctl plan upgrade-cluster` (the Kubernetes upgrade plan) and `ufcctl upgrade-cluster` (the upgrade:
control planes one at a time, then the workers on the fleet engine)."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app import fleet as fleet_app
from ufcctl.app.upgrade_cluster import check_request, upgrade_control_planes
from ufcctl.app.upgrade_plan import UpgradePlan, plan_upgrade_cluster
from ufcctl.cli.fleet import Fleet, fleet_options, progress, rollout_request
from ufcctl.cli.numbers import MAX_NODE_TIMEOUT, integer
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.errors import InputError
from ufcctl.report.output import print_json
from ufcctl.report.rollout import summary_out
from ufcctl.rollout.kinds import upgrade_cluster

# 20 workers at a time: a drained node's pods must find room on the rest and PodDisruptionBudgets allow
# few disruptions at once; each node's restart is short (binaries, kubelet restart, Ready again), so the
# window, not the batch, bounds the disruption. More is a flag away.
DEFAULT_BATCH = 20
DEFAULT_WINDOW = 1


@click.command("upgrade-cluster")
@inventory_option()
@click.option("--version", "version", required=True, help="The Kubernetes version to go to, e.g. v1.35.4.")
@output_option()
def plan_upgrade(inventory: Path, version: str, output: str) -> None:
    """Check an upgrade to --version against Kubernetes' version-skew policy (one minor at a time, no
    downgrade, kubelets at most 3 minors behind, the etcd kubeadm accepts) and print its phases.

    Reads every apiserver's /version, the Nodes' kubelet versions (KUBECONFIG) and every etcd member's
    version; touches nothing. Exit 2 when the policy refuses the upgrade, naming what is in the way.
    """
    report = plan_upgrade_cluster(inventory, version)
    verdict = report.verdict
    if output == "json":
        print_json(report.to_json())
    else:
        _print_plan(report)
    if not verdict.allowed:
        raise InputError(f"upgrade to {verdict.target} refused: {verdict.refusals[0]}",
                         details=list(verdict.refusals[1:]))


def _print_plan(report: UpgradePlan) -> None:
    verdict = report.verdict
    click.echo(f"upgrade-cluster plan: {verdict.current} -> {verdict.target}")
    if verdict.allowed and not verdict.nothing_to_do:
        first, *others = report.control_planes
        click.echo("  1. snapshot etcd core, events and pods (as `ufcctl etcd backup`)")
        click.echo("  2. control planes one at a time, each out of haproxy's backends while it "
                   f"restarts: {first} (kubeadm upgrade apply {verdict.target})"
                   + (f", then {', '.join(others)} (kubeadm upgrade node)" if others else ""))
        click.echo(f"  3. {report.workers} worker(s) on the fleet engine: drain, kubeadm upgrade node, "
                   f"kubelet {verdict.target}, restart, health gate, uncordon")
    elif verdict.nothing_to_do:
        which = "apiserver and kubelet" if report.kubelets_read else "apiserver"
        click.echo(f"  nothing to do: every {which} runs {verdict.target}")
    click.echo(f"  kubelet versions from: {report.kubelets_from}")
    for line in verdict.warnings:
        click.echo(f"  warning: {line}")


@click.command("upgrade-cluster")
@inventory_option()
@click.option("--version", "version", required=True,
              help="The Kubernetes version to go to, e.g. v1.35.4 (the inventory's ufc_kube_version must "
                   "say it).")
@fleet_options(group="kube_node", batch=DEFAULT_BATCH, window=DEFAULT_WINDOW, order=True)
@click.option("--drain-timeout", type=integer(10, MAX_NODE_TIMEOUT),
              default=upgrade_cluster.DEFAULT_DRAIN_TIMEOUT, show_default=True,
              help="Seconds kubectl drain may wait for one worker's pods to be evicted.")
@click.option("--dry-run", is_flag=True,
              help="The skew check and the phases only (as `ufcctl plan upgrade-cluster`); touch nothing.")
@output_option()
def upgrade_cluster_command(inventory: Path, version: str, fleet: Fleet, drain_timeout: int, dry_run: bool,
                            output: str) -> None:
    """Upgrade Kubernetes to --version: refused (exit 2, nothing touched) when the version-skew policy
    refuses it or the inventory's ufc_kube_version says otherwise; then a snapshot of every etcd cluster,
    the control planes one at a time (each out of haproxy's backends while kubeadm upgrade apply|node
    restarts it), then the workers on the fleet engine (drain, kubeadm upgrade node, kubelet, restart,
    Ready on the new kubelet, uncordon). `ufcctl resume RUN_ID` continues a stopped worker phase."""
    inventory_data, report = check_request(inventory, version)
    # "nothing to do" needs the kubelets' versions too: without a kubeconfig a rerun after a stopped
    # worker phase goes through both phases (each node's probe skips what is done)
    if dry_run or (report.verdict.nothing_to_do and report.kubelets_read):
        _print_plan(report)
        return
    request = rollout_request(fleet, inventory, options=upgrade_cluster.upgrade_options(
        version=report.verdict.target, drain_timeout=drain_timeout))
    upgrade_control_planes(inventory, inventory_data, report,
                           log=lambda line: click.echo(line, err=output == "json"))
    summary_out(fleet_app.start(upgrade_cluster.KIND, request, progress=progress(output),
                                inventory=fleet_app.loaded(inventory, inventory_data)), output)


COMMANDS: list[click.Command] = [upgrade_cluster_command]
PLAN_COMMANDS = [plan_upgrade]  # under `ufcctl plan` (cli/main.py)
