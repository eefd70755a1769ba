"""Capacity arithmetic for VictoriaMetrics and vmagent at 16,000 nodes (reference §5, "Sizing").

Documented inputs: ~1,000 series per node exporter, ~1 byte per sample plus ~20% index, disk =
bytes/sample × rate × replicas × (retention + 1 cycle) × 1.25 with 20-30% free, 50% CPU headroom
(docs/reference/nodes-observability-images.md §5). Every other per-exporter figure is an ESTIMATE,
named as such below, to be replaced by a measurement (`count({job="..."})`) from a real cluster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Reference §5: about 1 byte per sample on disk, plus about 20% for the index.
BYTES_PER_SAMPLE = 1.0 * 1.2
# Reference §5: the formula's safety factor, and the free disk to keep (upper end of 20-30%).
DISK_FACTOR = 1.25
FREE_DISK = 0.30
# ASSUMPTION: samples/s one vmagent scrapes and forwards on a mid-size VM; no figure in the reference.
# Run each at 50% of it (reference §5: keep 50% headroom of CPU), hence 150k samples/s per shard.
VMAGENT_SAMPLES_PER_S = 300_000
HEADROOM = 0.5


@dataclass(frozen=True)
class SizingInput:
    nodes: int = 16_000
    node_series: int = 1_000  # reference §5: a node_exporter exposes about 1,000 series
    # ESTIMATE: etcd 3.4 with histograms (wal/commit/grpc) and Go runtime metrics, per member.
    etcd_members: int = 9  # three clusters (core, events, pods) of three members
    etcd_series: int = 3_000
    # ESTIMATE: HAProxy's exporter per process, frontend + backend + per-server series.
    lb_hosts: int = 2
    haproxy_series: int = 500
    # ESTIMATE: NPU Exporter, ~8 chips × ~40 metrics per NPU node.
    npu_nodes: int = 16_000
    npu_series: int = 300
    # ESTIMATE: kube-apiserver's request histograms by verb/resource dominate, per instance.
    apiservers: int = 5
    apiserver_series: int = 20_000
    scrape_interval_s: int = 15
    retention_days: int = 30
    # VictoriaMetrics drops a month-long partition only once all of it is past retention, so one
    # extra cycle of 31 days is on disk (VictoriaMetrics README, "Retention"; not in our reference).
    cycle_days: int = 31
    replicas: int = 2  # two single-node instances, vmagent writes to both (reference §5, HA)


@dataclass(frozen=True)
class SizingReport:
    inputs: SizingInput
    active_series: int
    samples_per_s: float
    disk_per_day_per_replica_bytes: float
    disk_per_replica_bytes: float  # retention + cycle, × DISK_FACTOR, with FREE_DISK kept free
    disk_total_bytes: float
    vmagent_shards: int


def size(inputs: SizingInput | None = None) -> SizingReport:
    """Active series, ingest rate, disk and vmagent shards for one cluster."""
    i = inputs or SizingInput()
    if i.scrape_interval_s <= 0 or i.replicas <= 0 or i.retention_days <= 0:
        raise ValueError("scrape interval, replicas and retention must be positive")
    series = (i.nodes * i.node_series + i.etcd_members * i.etcd_series + i.lb_hosts * i.haproxy_series
              + i.npu_nodes * i.npu_series + i.apiservers * i.apiserver_series)
    rate = series / i.scrape_interval_s
    per_day = rate * 86_400 * BYTES_PER_SAMPLE
    per_replica = per_day * (i.retention_days + i.cycle_days) * DISK_FACTOR / (1 - FREE_DISK)
    # Every replica receives every sample, but scraping happens once: shards depend on the rate only.
    shards = math.ceil(rate / (VMAGENT_SAMPLES_PER_S * HEADROOM))
    return SizingReport(i, series, rate, per_day, per_replica, per_replica * i.replicas, shards)


def _human(n: float, unit: str = "") -> str:
    for factor, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= factor:
            return f"{n / factor:.2f} {suffix}{unit}"
    return f"{n:.0f} {unit}".rstrip()


def markdown_table(report: SizingReport) -> str:
    """The sizing as a Markdown table for the role README."""
    i = report.inputs
    rows = [
        ("Nodes", f"{i.nodes:,}"),
        ("Scrape interval", f"{i.scrape_interval_s} s"),
        ("Retention (+ partition cycle)", f"{i.retention_days} d (+ {i.cycle_days} d)"),
        ("Replicas", str(i.replicas)),
        ("Active series", f"{report.active_series:,}"),
        ("Samples/s", _human(report.samples_per_s)),
        ("Disk per day per replica", _human(report.disk_per_day_per_replica_bytes, "B")),
        ("Disk per replica (× 1.25, 30% free)", _human(report.disk_per_replica_bytes, "B")),
        ("Disk, all replicas", _human(report.disk_total_bytes, "B")),
        ("vmagent shards (150k samples/s each)", str(report.vmagent_shards)),
    ]
    lines = ["| quantity | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines) + "\n"
