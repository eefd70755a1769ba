"""Registry mirrors for a 16,000-node fleet: the cache index built once versus a scan of every cache per node.

2,000 ToRs of 8 nodes, 125 super pods of 16 ToRs, one cache per ToR and one per super pod (2,125
caches), two upstreams. Prints both wall times, the ratio and the machine. Pure Python, no I/O.

    python tests/benchmarks/bench_registry_mirrors.py
"""

from __future__ import annotations

import os
import platform
import time
from typing import Any

from ufcctl.domain.images.mirrors import (
    CacheIndex,
    index_caches,
    node_mirrors,
    parse_caches,
    parse_upstreams,
)

UPSTREAMS = [{"name": "hub", "registry": "docker.io", "url": "https://registry-1.docker.io", "port": 5000},
             {"name": "site", "registry": "10.1.2.3:5000", "url": "http://10.1.2.3:5000", "port": 5001}]


def fleet() -> tuple[dict[str, list[str]], dict[str, dict[str, Any]], list[str]]:
    hostvars: dict[str, dict[str, Any]] = {}
    nodes = [f"node{i:05d}" for i in range(16_000)]
    for i, name in enumerate(nodes):
        hostvars[name] = {"npu_tor_id": i // 8, "npu_super_pod_id": i // 128}
    caches = []
    for t in range(2_000):
        caches.append(f"ctor{t:04d}")
        hostvars[caches[-1]] = {"npu_tor_id": t, "ansible_host": f"10.200.{t // 256}.{t % 256}"}
    for s in range(125):
        caches.append(f"csp{s:03d}")
        hostvars[caches[-1]] = {"registry_cache_tier": "super_pod", "npu_super_pod_id": s,
                                "ansible_host": f"10.201.0.{s}"}
    return {"registry_cache": caches}, hostvars, nodes


def main() -> None:
    from benchlib import take_record  # this directory: the script's own

    record = take_record("bench_registry_mirrors")
    groups, hostvars, nodes = fleet()
    upstreams, _ = parse_upstreams(UPSTREAMS)
    start = time.perf_counter()
    index = index_caches(parse_caches(groups, hostvars)[0])
    once = [node_mirrors(hostvars[n], index, upstreams) for n in nodes]
    indexed = time.perf_counter() - start
    # baseline: what a per-node computation without a shared index does (parse and index every
    # cache for each node), on a 1/16 sample extrapolated to the fleet
    sample = nodes[::16]
    start = time.perf_counter()
    for n in sample:
        own: CacheIndex = index_caches(parse_caches(groups, hostvars)[0])
        node_mirrors(hostvars[n], own, upstreams)
    per_node = (time.perf_counter() - start) * len(nodes) / len(sample)
    assert len(once) == len(nodes)
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}")
    print(f"16,000 nodes, 2,125 caches: index once {indexed:.3f} s; index per node {per_node:.1f} s "
          f"(extrapolated from {len(sample)} nodes); ratio {per_node / indexed:.0f}x")
    record.figure("index once", indexed, "s")
    record.figure("index per node (extrapolated)", per_node, "s")
    record.ratio("per node / once", per_node / indexed)
    record.write()


if __name__ == "__main__":
    main()
