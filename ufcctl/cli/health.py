"""`ufcctl health`: flags and printing for the cluster health report read from VictoriaMetrics."""

from __future__ import annotations

import datetime
from pathlib import Path

import click

from ufcctl.app.health import HEALTH_TIMEOUT, health_report
from ufcctl.cli import numbers
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.domain.monitoring.health import EtcdHealth, HealthReport
from ufcctl.errors import RunFailed
from ufcctl.report.output import human_bytes, print_json, print_table


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _etcd_row(e: EtcdHealth) -> tuple[str, ...]:
    return (
        e.cluster,
        f"{e.members_up}/{e.members_total}",
        e.leader or "-",
        human_bytes(e.db_size_max),
        human_bytes(e.quota),
        "-" if e.quota_percent is None else f"{e.quota_percent:.1f}%",
        _when(e.last_defrag),
        e.last_defrag_result or "-",
        "; ".join(e.problems) or "ok",
    )


def _section(title: str, columns: list[str], rows: list[tuple[str, ...]]) -> None:
    """A headline with the count (never wrapped, unlike a narrow table's title), then the rows if any."""
    click.echo(f"{title}: {len(rows) or 'none'}")
    if rows:
        print_table("", columns, rows)


def _print_text(report: HealthReport) -> None:
    click.echo(f"asked {report.source}: {'healthy' if report.healthy else 'NOT HEALTHY'}")
    _section(
        "Alerts firing",
        ["alertname", "severity", "labels"],
        [(a.name, a.severity, ", ".join(f"{k}={v}" for k, v in a.labels) or "-") for a in report.alerts],
    )
    _section(
        "etcd clusters",
        ["cluster", "up", "leader", "db max", "quota", "used", "last defrag", "result", "problems"],
        [_etcd_row(e) for e in report.etcd],
    )
    _section(
        "VIP",
        ["vip", "holders", "state"],
        [
            (v.vip, ", ".join(v.holders) or "-", "ok" if len(v.holders) == 1 else "PROBLEM")
            for v in report.vips
        ],
    )
    _section("Nodes down", ["instance"], [(n,) for n in report.nodes_down])
    _section(
        "NPU chips unhealthy", ["instance", "id"], [(c.instance, c.chip) for c in report.npu_unhealthy]
    )
    for problem in report.problems:
        click.echo(f"problem: {problem}")


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
        _print_text(report)
    if not report.healthy:
        raise RunFailed(
            f"cluster not healthy: {len(report.alerts)} alert(s) firing, {len(report.problems)} problem(s)",
            "see the report above; each alert's runbook is in its `runbook` annotation",
        )


COMMANDS = [health]
