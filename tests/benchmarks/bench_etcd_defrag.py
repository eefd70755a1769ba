"""Write latency during a rolling defrag versus without, bytes reclaimed and time per member.

Runs against a deployed lab (`ufcctl lab up && ufcctl deploy --inventory lab`), same machine, same
run: a paced writer (RATE puts/s over every member) first alone for SECONDS (baseline), then while
the controller runs the agents' procedure on every member (followers first, leader last) after
MEGABYTES of values were written and deleted. Prints p50/p99 put latency (acknowledged puts,
retries included) for both windows and their ratio, per-member defrag seconds and bytes reclaimed.

    python tests/benchmarks/bench_etcd_defrag.py [--inventory lab] [--cluster events]
        [--megabytes 64] [--rate 200] [--seconds 20]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from etcd_writer import Writer, percentile  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import take_record  # noqa: E402

from ufcctl.app.inventory import load_inventory  # noqa: E402
from ufcctl.domain.etcd.defrag import DefragSettings  # noqa: E402
from ufcctl.domain.etcd.rule import parse_rule  # noqa: E402
from ufcctl.domain.etcd.settings import controller_pki_dir  # noqa: E402
from ufcctl.domain.etcd.topology import etcd_clusters  # noqa: E402
from ufcctl.engine.etcd_client import ClusterClient, Gateway, TlsFiles  # noqa: E402
from ufcctl.nodeside.etcd_defrag import DefragRun  # noqa: E402
from ufcctl.nodeside.etcd_defrag_config import AgentConfig  # noqa: E402
from ufcctl.paths import resolve_inventory, state_dir  # noqa: E402

MiB = 1024 * 1024


def _latencies(writer: Writer, start: float, end: float) -> list[float]:
    return [lat for t, lat in writer.stats.latencies if start <= t <= end]


def main() -> None:
    record = take_record("bench_etcd_defrag")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", default="lab")
    parser.add_argument("--cluster", default="events", choices=["core", "events", "pods"])
    parser.add_argument("--megabytes", type=int, default=64)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()

    inventory = load_inventory(resolve_inventory(args.inventory))
    cluster = next(c for c in etcd_clusters(inventory) if c.name == args.cluster)
    pki = controller_pki_dir(inventory.hosts[cluster.members[0].host].vars, state_dir())
    tls = TlsFiles(str(pki / "ca.crt"), str(pki / "ufcctl.crt"), str(pki / "ufcctl.key"))
    endpoints = list(cluster.client_urls)
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print(f"cluster {cluster.name}: {len(endpoints)} members; writer {args.rate:.0f} puts/s of 256 B")

    prefix = f"/bench/{int(time.time())}"
    with Writer(endpoints, tls, prefix + "/base", rate=args.rate, threads=16) as base:
        time.sleep(args.seconds)
    base_lat = [lat for _, lat in base.stats.latencies]

    gateway = Gateway(endpoints[0], tls)
    value = "x" * (100 * 1024)
    for i in range(args.megabytes * 10):
        gateway.put(f"{prefix}/fill/{i:06d}", value)
    gateway.delete_prefix(f"{prefix}/fill/")

    settings = DefragSettings(
        rule=parse_rule("dbSizeFree > 1024*1024"),
        quota_bytes=8 << 30,
        min_interval_seconds=0,
        compaction_keep_revisions=0,
    )
    config = AgentConfig(
        cluster=cluster.name, endpoints=tuple(endpoints), tls=tls, settings=settings, by="bench"
    )
    client = ClusterClient(cluster.name, endpoints, tls)
    lines: list[str] = []
    with Writer(endpoints, tls, prefix + "/during", rate=args.rate, threads=16) as during:
        time.sleep(2)
        started = time.monotonic()
        result: list = []
        runner = threading.Thread(target=lambda: result.append(DefragRun(config, client, lines.append).run()))
        runner.start()
        runner.join()
        ended = time.monotonic()
        time.sleep(1)
    report = result[0]
    during_lat = _latencies(during, started, ended)
    gateway.delete_prefix(prefix + "/")

    print(f"{'window':<22}{'puts':>8}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}{'puts/s':>9}")
    for name, stats, lat in (
        ("baseline", base.stats, base_lat),
        ("during rolling defrag", during.stats, during_lat),
    ):
        print(
            f"{name:<22}{len(lat):>8}{percentile(lat, 50) * 1000:>10.1f}{percentile(lat, 99) * 1000:>10.1f}"
            f"{max(lat or [0]) * 1000:>10.1f}{stats.rate:>9.0f}"
        )
        record.figure(f"{name} put p50", percentile(lat, 50) * 1000, "ms")
        record.figure(f"{name} put p99", percentile(lat, 99) * 1000, "ms")
    print(
        f"ratio during/baseline: p50 x{percentile(during_lat, 50) / percentile(base_lat, 50):.2f}, "
        f"p99 x{percentile(during_lat, 99) / percentile(base_lat, 99):.2f}; "
        f"lost writes: {len(during.stats.failed) + len(base.stats.failed)}, retries: {during.stats.retries}"
    )
    print(
        f"{'member':<16}{'leader':>7}{'action':>14}{'seconds':>9}{'before MiB':>12}{'after MiB':>11}"
        f"{'reclaimed':>11}"
    )
    for o in report.outcomes:
        before = o.before.db_size / MiB if o.before else 0.0
        after = o.after.db_size / MiB if o.after else before
        print(
            f"{o.member:<16}{'yes' if o.leader else '':>7}{o.action:>14}{o.seconds:>9.2f}{before:>12.1f}"
            f"{after:>11.1f}{before - after:>11.1f}"
        )
    print(f"rolling defrag wall time: {ended - started:.1f}s for {len(report.outcomes)} members")
    record.figure("rolling defrag wall", ended - started, "s")
    record.figure("lost writes", len(during.stats.failed) + len(base.stats.failed), "writes")
    record.ratio("p99 during / baseline", percentile(during_lat, 99) / percentile(base_lat, 99))
    record.write()


if __name__ == "__main__":
    main()
