"""`ufcctl health`: flags and printing for the cluster health report read from VictoriaMetrics."""

from __future__ import annotations

from pathlib import Path

import click

from ufcctl.app.health import HEALTH_TIMEOUT, health_report
from ufcctl.cli import numbers
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.errors import RunFailed
from ufcctl.report.health import print_health
from ufcctl.report.output import print_json


@click.command()
@inventory_option()
@click.option(
    "--timeout", type=numbers.number(0.001, numbers.MAX_SECONDS), default=HEALTH_TIMEOUT, show_default=True,
    help="Seconds each query has to answer before the next monitoring host is tried.",
)
@output_option()
def health(inventory: Path, timeout: float, output: str) -> None:
    """Firing alerts, etcd clusters, VIP holder, nodes down and unhealthy NPU chips, from VictoriaMetrics.

    Asks the first `monitoring` host of the inventory that answers (port: host var
    monitoring_vm_port, default 8428).

    Exit codes: 0 nothing firing and no problem; 1 alerts firing or problems shown (the report is
    printed first), or no monitoring host answered; 2 bad input (no `monitoring` hosts).
    """
    report = health_report(inventory, timeout)
    if output == "json":
        print_json(report.to_json())
    else:
        print_health(report)
    if not report.healthy:
        raise RunFailed(
            f"cluster not healthy: {len(report.alerts)} alert(s) firing, {len(report.problems)} problem(s)",
            "see the report above; each alert's runbook is in its `runbook` annotation",
        )


COMMANDS = [health]
