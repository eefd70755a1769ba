"""`ufcctl health` for people: a headline, then one section per kind of finding (alerts, etcd
clusters, VIP, nodes down, NPU chips; from the API: Nodes NotReady, workloads unavailable), each a count
and its table."""

from __future__ import annotations

import datetime

from ufcctl.domain.monitoring.health import EtcdHealth, HealthReport
from ufcctl.report.output import human_bytes, print_table


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
    print(f"{title}: {len(rows) or 'none'}")
    if rows:
        print_table("", columns, rows)


def print_health(report: HealthReport) -> None:
    print(f"asked {report.source}: {'healthy' if report.healthy else 'NOT HEALTHY'}")
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
    _api(report)
    for problem in report.problems:
        print(f"problem: {problem}")


def _api(report: HealthReport) -> None:
    api = report.api
    if api is None:
        print(f"Kubernetes API: not read: {report.api_skipped or '-'}")
        return
    where = f"read through {api.source}"
    if api.readiness is None:
        print(f"Kubernetes API ({where}): no answer")
        return
    print(f"Kubernetes API ({where}): {api.readiness.nodes} Node(s), {api.readiness.workloads} add-on "
          "workload(s)")
    _section("Nodes NotReady", ["node"], [(n,) for n in report.nodes_not_ready])
    _section(
        "Workloads unavailable",
        ["namespace", "kind", "name", "ready", "why"],
        [(w.namespace, w.kind, w.name, f"{w.ready}/{w.desired}", w.why)
         for w in report.workloads_unavailable],
    )
