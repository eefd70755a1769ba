"""metric_names_in: metric names out of PromQL/MetricsQL, never functions, keywords, labels or durations."""

from __future__ import annotations

import pytest

from ufcctl.domain.monitoring import metrics

CASES = [
    ("bare", "up", {"up"}),
    ("selector labels are not metrics", 'up{job="node", instance=~"a|b"} == 0', {"up"}),
    ("function and range", "rate(node_cpu_seconds_total{mode='idle'}[5m])", {"node_cpu_seconds_total"}),
    ("aggregation with by before", "sum by (vip, instance) (ufcctl_vip_held) < 1", {"ufcctl_vip_held"}),
    ("aggregation with by after", "sum(ufcctl_vip_held) without (instance) > 1", {"ufcctl_vip_held"}),
    ("binary with on/group_left", "a_total / on (job) group_left (member) b_info", {"a_total", "b_info"}),
    ("ignoring and bool", "x ignoring (le) > bool y", {"x", "y"}),
    ("set operators", "a and b or c unless d", {"a", "b", "c", "d"}),
    ("offset and subquery", "node_load1 offset 1h > max_over_time(node_load1[1h:5m])", {"node_load1"}),
    ("numbers and exponents", "node_load1 > 1e3 and node_load1 < 0x1f", {"node_load1"}),
    ("strings are opaque", 'label_replace(up, "dst", "$1", "src", "(nfs_server.*)")', {"up"}),
    ("colons in recording names", "job:up:sum > 0", {"job:up:sum"}),
    ("histogram", "histogram_quantile(0.99, sum by (le) (rate(etcd_disk_wal_fsync_duration_seconds_bucket"
                  '{job="etcd"}[5m])))', {"etcd_disk_wal_fsync_duration_seconds_bucket"}),
    ("time() is a function", "time() - ufcctl_etcd_defrag_last_success_timestamp_seconds > 172800",
     {"ufcctl_etcd_defrag_last_success_timestamp_seconds"}),
    ("space before the call", "abs (node_time_seconds)", {"node_time_seconds"}),
    ("keyword lookalikes in names", "node_on_total + by_total", {"node_on_total", "by_total"}),
]


@pytest.mark.parametrize(("expr", "names"), [(e, n) for _, e, n in CASES], ids=[c[0] for c in CASES])
def test_metric_names_in(expr: str, names: set[str]) -> None:
    assert metrics.metric_names_in(expr) == names


def test_registry_has_the_contract_jobs_and_no_duplicates() -> None:
    assert {"node", "etcd", "haproxy", "npu-exporter", "kube-apiserver"} <= set(metrics.REGISTRY)
    seen: list[str] = [name for names in metrics.REGISTRY.values() for name in names]
    assert len(seen) == len(set(seen))
    assert "etcd_disk_wal_fsync_duration_seconds_bucket" in metrics.known_metrics()
    assert "ALERTS" in metrics.known_metrics() and "up" in metrics.known_metrics()
