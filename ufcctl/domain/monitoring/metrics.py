"""The metric names our exporters produce, by scrape job (roles/monitoring/README.md), and a name extractor.

Rules and dashboards may only name metrics listed here; the unit tests check every expression with
`metric_names_in`, so a misspelt metric fails a test instead of yielding an alert that never fires.
"""

from __future__ import annotations

import re

# job label -> metric names (histograms list their `_bucket` series explicitly: that is what we query).
REGISTRY: dict[str, frozenset[str]] = {
    "node": frozenset({
        "node_load1",
        "node_filesystem_avail_bytes",
        "node_filesystem_size_bytes",
        "node_memory_MemAvailable_bytes",
        "node_memory_MemTotal_bytes",
        "node_cpu_seconds_total",
        "node_nf_conntrack_entries",
        "node_nf_conntrack_entries_limit",
        "node_textfile_scrape_error",
        "node_time_seconds",
    }),
    # Written by ufcctl into the node exporter's textfile directory, so scraped under job="node".
    "textfile": frozenset({
        "ufcctl_etcd_defrag_last_run_timestamp_seconds",
        "ufcctl_etcd_defrag_last_success_timestamp_seconds",
        "ufcctl_etcd_defrag_last_duration_seconds",
        "ufcctl_etcd_defrag_last_result",
        "ufcctl_etcd_backup_last_run_timestamp_seconds",
        "ufcctl_etcd_backup_last_success_timestamp_seconds",
        "ufcctl_etcd_backup_last_size_bytes",
        "ufcctl_etcd_backup_last_result",
        "ufcctl_etcd_backup_offsite_last_result",
        "ufcctl_vip_held",
        "ufcctl_service_active",
        "ufcctl_certificate_not_after_timestamp_seconds",
        "ufcctl_npu_fabric_link_up",
        "ufcctl_npu_fabric_as_planned",
        "ufcctl_npu_fabric_ping_loss_ratio",
    }),
    "etcd": frozenset({
        "etcd_server_has_leader",
        "etcd_server_is_leader",
        "etcd_server_leader_changes_seen_total",
        "etcd_mvcc_db_total_size_in_bytes",
        "etcd_mvcc_db_total_size_in_use_in_bytes",
        "etcd_server_quota_backend_bytes",
        "etcd_disk_wal_fsync_duration_seconds_bucket",
        "etcd_disk_backend_commit_duration_seconds_bucket",
        "etcd_server_proposals_failed_total",
    }),
    "haproxy": frozenset({
        "haproxy_backend_active_servers",
        "haproxy_server_status",
        "haproxy_process_start_time_seconds",
        "haproxy_frontend_current_sessions",
    }),
    # MindCluster's NPU Exporter; the lab emulator publishes the same name through the textfile collector.
    "npu-exporter": frozenset({"npu_chip_info_health_status"}),
    "kube-apiserver": frozenset({"apiserver_request_total", "apiserver_request_terminations_total"}),
}

# Series every scrape or vmalert adds, not owned by one exporter.
BUILTIN: frozenset[str] = frozenset({"up", "ALERTS"})


def known_metrics() -> frozenset[str]:
    """Every name an expression may use."""
    return BUILTIN.union(*REGISTRY.values())


# PromQL/MetricsQL words that look like identifiers but are not metric names.
KEYWORDS = frozenset({
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
    "offset", "if", "ifnot", "default", "keep_metric_names", "limit", "inf", "nan",
})
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_BRACES = re.compile(r"\{[^{}]*\}")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.I)
_IDENT = re.compile(r"(?<![\w.:$])([A-Za-z_:][A-Za-z0-9_:]*)(?![\w])(\s*\()?")


def metric_names_in(expr: str) -> set[str]:
    """Metric names an expression selects: identifiers that are not functions, keywords, label
    names (in `{...}` or a by/without/on list), durations (`[5m]`, `offset 1h`) or strings."""
    text = _STRING.sub('""', expr)
    # `{...}` holds label matchers; a bare `{__name__="x"}` selector is not used by our rules.
    text = _BRACES.sub(" ", text)
    text = _BRACKETS.sub(" ", text)
    text = _GROUPING.sub(" ", text)
    names: set[str] = set()
    for match in _IDENT.finditer(text):
        word, call = match.group(1), match.group(2)
        if call or word.lower() in KEYWORDS:
            continue
        start = match.start(1)
        # A duration after `offset` (`offset 5m`) or a number's exponent start with a digit, which
        # the identifier pattern already rejects; guard the `1e3`-style tail explicitly.
        if start > 0 and text[start - 1].isdigit():
            continue
        names.add(word)
    return names
