"""Sizing at 16,000 nodes against numbers worked out by hand (reference §5)."""

from __future__ import annotations

import pytest

from ufcctl.domain.monitoring import sizing

NODE_ONLY = sizing.SizingInput(etcd_members=0, lb_hosts=0, npu_nodes=0, apiservers=0)


def test_node_exporters_alone_at_15s() -> None:
    report = sizing.size(NODE_ONLY)
    assert report.active_series == 16_000_000
    assert report.samples_per_s == pytest.approx(1_066_666.67, rel=1e-6)
    # 1,066,666.67 × 86,400 = 92.16e9 samples/day (reference: ≈ 92 GB/day at 1 byte), × 1.2 for the index.
    assert report.disk_per_day_per_replica_bytes == pytest.approx(110.592e9, rel=1e-6)
    # (30 + 31) days × 110.592 GB = 6,746.11 GB, × 1.25 / 0.7 = 12,046.63 GB; two replicas double it.
    assert report.disk_per_replica_bytes == pytest.approx(12_046.63e9, rel=1e-5)
    assert report.disk_total_bytes == pytest.approx(2 * 12_046.63e9, rel=1e-5)
    # 1,066,667 / 150,000 = 7.1 -> 8 vmagent shards.
    assert report.vmagent_shards == 8


def test_node_exporters_alone_at_60s() -> None:
    report = sizing.size(sizing.SizingInput(etcd_members=0, lb_hosts=0, npu_nodes=0, apiservers=0,
                                            scrape_interval_s=60))
    assert report.samples_per_s == pytest.approx(266_666.67, rel=1e-6)  # reference: ≈ 0.27M samples/s
    assert report.vmagent_shards == 2


def test_default_cluster_adds_every_exporter() -> None:
    report = sizing.size()
    # 16M node + 9 × 3k etcd + 2 × 500 haproxy + 16k × 300 NPU + 5 × 20k apiserver
    assert report.active_series == 16_000_000 + 27_000 + 1_000 + 4_800_000 + 100_000 == 20_928_000
    assert report.samples_per_s == pytest.approx(1_395_200)
    assert report.vmagent_shards == 10  # 1,395,200 / 150,000 = 9.3


def test_markdown_table_for_the_readme() -> None:
    table = sizing.markdown_table(sizing.size(NODE_ONLY))
    assert table.startswith("| quantity | value |\n|---|---|\n")
    assert "| Active series | 16,000,000 |" in table
    assert "| Samples/s | 1.07 M |" in table
    assert "| Disk per day per replica | 110.59 GB |" in table
    assert "| vmagent shards (150k samples/s each) | 8 |" in table


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="scrape interval"):
        sizing.size(sizing.SizingInput(scrape_interval_s=0))
