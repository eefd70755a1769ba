"""Grafana dashboard models (JSON, schemaVersion 36) for etcd, the apiserver load balancers, nodes and NPUs.

Built from the metric registry (metrics.py), so a panel cannot query a name our exporters do not
produce. Every target uses the `${datasource}` variable: an operator picks the VictoriaMetrics
instance when importing (VictoriaMetrics answers the Prometheus query API).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

SCHEMA_VERSION = 36
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# Grafana lays panels out on a 24-column grid.
GRID_WIDTH = 24


@dataclass(frozen=True)
class Panel:
    title: str
    exprs: tuple[str, ...]
    kind: str = "timeseries"  # timeseries | stat
    unit: str = "short"
    legend: str = ""  # legendFormat, e.g. "{{instance}}"
    width: int = 12


def _panel(panel_id: int, panel: Panel, x: int, y: int) -> dict[str, Any]:
    height = 4 if panel.kind == "stat" else 8
    return {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "datasource": dict(DATASOURCE),
        "gridPos": {"h": height, "w": panel.width, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
        "options": {},
        "targets": [
            {"expr": expr, "refId": chr(ord("A") + i), "legendFormat": panel.legend,
             "datasource": dict(DATASOURCE)}
            for i, expr in enumerate(panel.exprs)
        ],
    }


def _dashboard(uid: str, title: str, panels: list[Panel]) -> dict[str, Any]:
    """Place panels left to right, wrapping at the grid width; ids are 1..n in order."""
    laid_out: list[dict[str, Any]] = []
    x = y = row_height = 0
    for panel_id, panel in enumerate(panels, start=1):
        if x + panel.width > GRID_WIDTH:
            x, y, row_height = 0, y + row_height, 0
        model = _panel(panel_id, panel, x, y)
        laid_out.append(model)
        x += panel.width
        row_height = max(row_height, model["gridPos"]["h"])
    return {
        "uid": uid,
        "title": title,
        "tags": ["ufcctl"],
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "timezone": "",
        "templating": {"list": [{
            "name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "refresh": 1, "regex": "", "options": [],
        }]},
        "annotations": {"list": []},
        "panels": laid_out,
    }


def _etcd() -> dict[str, Any]:
    by_member = "{{etcd_cluster}}/{{member}}"
    p99 = ("histogram_quantile(0.99, sum by (etcd_cluster, member, le) "
           '(rate({}{{job="etcd"}}[5m])))')
    return _dashboard("ufcctl-etcd", "ufcctl / etcd", [
        Panel("Members without a leader", ('count(etcd_server_has_leader{job="etcd"} == 0) or vector(0)',),
              "stat", width=6),
        Panel("Members down", ('count(up{job="etcd"} == 0) or vector(0)',), "stat", width=6),
        Panel("Leader changes (1h)", ('sum by (etcd_cluster) (increase(etcd_server_leader_changes_seen_total'
                                      '{job="etcd"}[1h]))',), "stat", legend="{{etcd_cluster}}", width=6),
        Panel("Failed proposals (5m rate)", ('sum by (etcd_cluster) (rate(etcd_server_proposals_failed_total'
                                             '{job="etcd"}[5m]))',), "stat", legend="{{etcd_cluster}}",
              width=6),
        Panel("WAL fsync p99", (p99.format("etcd_disk_wal_fsync_duration_seconds_bucket"),), unit="s",
              legend=by_member),
        Panel("Backend commit p99", (p99.format("etcd_disk_backend_commit_duration_seconds_bucket"),),
              unit="s", legend=by_member),
        Panel("Database size / quota", ('etcd_mvcc_db_total_size_in_bytes{job="etcd"}'
                                        ' / etcd_server_quota_backend_bytes{job="etcd"}',),
              unit="percentunit", legend=by_member),
        Panel("Database size and in use", ('etcd_mvcc_db_total_size_in_bytes{job="etcd"}',
                                           'etcd_mvcc_db_total_size_in_use_in_bytes{job="etcd"}'),
              unit="bytes", legend=by_member),
        Panel("Time since last successful defrag",
              ("time() - ufcctl_etcd_defrag_last_success_timestamp_seconds",), unit="s", legend=by_member),
        Panel("Last defrag: result (1 ok) and duration", ("ufcctl_etcd_defrag_last_result",
                                                          "ufcctl_etcd_defrag_last_duration_seconds"),
              legend=by_member),
    ])


def _apiserver_lb() -> dict[str, Any]:
    return _dashboard("ufcctl-apiserver-lb", "ufcctl / apiserver load balancers", [
        Panel("VIP holders", ("sum by (vip) (ufcctl_vip_held)",), "stat", legend="{{vip}}", width=8),
        Panel("HAProxy down", ('count(up{job="haproxy"} == 0) or vector(0)',), "stat", width=8),
        Panel("Backends without servers", ('count(haproxy_backend_active_servers{job="haproxy"} == 0)'
                                           " or vector(0)",), "stat", width=8),
        Panel("Active servers per backend", ('haproxy_backend_active_servers{job="haproxy"}',),
              legend="{{instance}} {{proxy}}"),
        Panel("Server state", ('haproxy_server_status{job="haproxy"}',),
              legend="{{instance}} {{proxy}}/{{server}}"),
        Panel("Frontend sessions", ('haproxy_frontend_current_sessions{job="haproxy"}',),
              legend="{{instance}} {{proxy}}"),
        Panel("HAProxy uptime", ('time() - haproxy_process_start_time_seconds{job="haproxy"}',), unit="s",
              legend="{{instance}}"),
        Panel("apiserver requests by code", ('sum by (code) (rate(apiserver_request_total'
                                             '{job="kube-apiserver"}[5m]))',),
              unit="reqps", legend="{{code}}"),
        Panel("apiserver terminated requests", ("sum by (instance) (rate(apiserver_request_terminations_total"
                                                '{job="kube-apiserver"}[5m]))',),
              unit="reqps", legend="{{instance}}"),
    ])


def _nodes() -> dict[str, Any]:
    # At 16k nodes a per-instance graph is unreadable: show counts and the worst ten (topk).
    return _dashboard("ufcctl-nodes", "ufcctl / nodes", [
        Panel("Node exporters up", ('sum(up{job="node"})',), "stat", width=8),
        Panel("Node exporters down", ('count(up{job="node"} == 0) or vector(0)',), "stat", width=8),
        Panel("Textfile collector errors", ("sum(node_textfile_scrape_error)",), "stat", width=8),
        Panel("Highest load1 (top 10)", ("topk(10, node_load1)",), legend="{{instance}}"),
        Panel("Lowest available memory (bottom 10)",
              ("bottomk(10, node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes)",),
              unit="percentunit", legend="{{instance}}"),
        Panel("Fullest filesystems (top 10)",
              ('topk(10, 1 - node_filesystem_avail_bytes{fstype!~"tmpfs|overlay"}'
               ' / node_filesystem_size_bytes{fstype!~"tmpfs|overlay"})',),
              unit="percentunit", legend="{{instance}} {{mountpoint}}"),
        Panel("Conntrack use (top 10)",
              ("topk(10, node_nf_conntrack_entries / node_nf_conntrack_entries_limit)",),
              unit="percentunit", legend="{{instance}}"),
        Panel("Busiest CPUs (top 10)",
              ('topk(10, 1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[5m])))',),
              unit="percentunit", legend="{{instance}}"),
        Panel("Clock skew (largest 10)", ("topk(10, abs(node_time_seconds - timestamp(node_time_seconds)))",),
              unit="s", legend="{{instance}}"),
        Panel("Services not active", ("ufcctl_service_active == 0",), legend="{{instance}} {{unit}}"),
    ])


def _npu() -> dict[str, Any]:
    return _dashboard("ufcctl-npu", "ufcctl / NPU", [
        Panel("Healthy chips", ("sum(npu_chip_info_health_status == 1) or vector(0)",), "stat", width=12),
        Panel("Unhealthy chips", ("count(npu_chip_info_health_status == 0) or vector(0)",), "stat", width=12),
        Panel("Unhealthy chips by node", ("count by (instance) (npu_chip_info_health_status == 0)",),
              legend="{{instance}}", width=24),
    ])


def dashboards() -> dict[str, dict[str, Any]]:
    """File name -> dashboard model, as committed under roles/monitoring/files/dashboards/."""
    return {"etcd.json": _etcd(), "apiserver-lb.json": _apiserver_lb(), "nodes.json": _nodes(),
            "npu.json": _npu()}


def dashboard_json(model: dict[str, Any]) -> str:
    """The text written to disk and returned by the role's filter (stable: sorted keys, 2-space indent)."""
    return json.dumps(model, indent=2, sort_keys=True) + "\n"
