"""`ufcctl plan upgrade-cluster`: flags and printing for the Kubernetes upgrade plan."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app.upgrade_plan import plan_upgrade_cluster
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.cli.rollout import plan
from ufcctl.errors import InputError
from ufcctl.report.output import print_json


@plan.command("upgrade-cluster")
@inventory_option()
@click.option("--version", "version", required=True, help="The Kubernetes version to go to, e.g. v1.32.0.")
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
    if not verdict.allowed:
        raise InputError(f"upgrade to {verdict.target} refused: {verdict.refusals[0]}",
                         details=list(verdict.refusals[1:]))


COMMANDS: list[click.Command] = []  # `plan upgrade-cluster` hangs under `plan` (ufcctl/cli/rollout.py)
