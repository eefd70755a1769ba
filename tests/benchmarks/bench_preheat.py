"""Image pre-heat on a deployed lab: through the registry caches versus every worker pulling from the
upstream itself, same lab, same run, two images of the same size.

The caches chain (issue 31): a ToR cache fills from its super pod's cache, each cache host's nginx
front collapses docker-registry 2.8's two fetches of a missed blob into one, and a preheat warms
the super pod caches first. So the upstream should send each blob once per super pod cache.

Needs a lab deployed with its registry caches (`./scripts/run.sh`, or `ufcctl lab up` + `ufcctl
deploy`); the LAB UPSTREAM REGISTRY (tests/lab_standins/upstream_registry, test code) is started here in
the lab's
mirror container twice: on the cached registry's port (the one `registry_cache_upstreams` names,
so the workers' hosts.toml sends them to their caches) and on a second port no cache mirrors (so
the workers pull from it directly). Both sides run `ufcctl images preheat` with the same flags.
Upstream bytes are counted from each registry's access log (successful blob GETs x blob size).

    python tests/benchmarks/bench_preheat.py --inventory inventories/lab [--layers 4 --layer-mib 6] \
        [--json tests/benchmarks/results/]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.benchlib import take_record  # noqa: E402
from tests.lab_standins.upstream_registry import registry  # noqa: E402
from tests.lab_standins.upstream_registry.image import MIB, TestImage, build_image  # noqa: E402
from tests.lab_standins.upstream_registry.push import push_image  # noqa: E402
from ufcctl.lab.layout import npu_mirror_name  # noqa: E402

DIRECT_PORT = 5002  # a second upstream no cache mirrors
DIRECT_LOG = "/var/log/ufc-lab-upstream-direct.log"
BENCH_VARS = "group_vars/all/bench-preheat.yml"


def _upstream_bytes(container: str, log: str, image: TestImage) -> tuple[int, int]:
    """(bytes, GETs) of this image's blobs the upstream served, from its access log."""
    sizes = {digest: len(blob) for digest, blob in image.blobs.items()}
    total = gets = 0
    for req in registry.requests(registry.read_log(container, log)):
        digest = req.uri.split("?")[0].rsplit("/", 1)[-1]
        if req.method == "GET" and req.status == 200 and digest in sizes:
            total += sizes[digest]
            gets += 1
    return total, gets


def _preheat(inventory: Path, ref: str, batch: int) -> tuple[float, list[float]]:
    """(wall seconds, each node's seconds as the engine measured them: its pull plus Ansible's cost)."""
    started = time.monotonic()
    proc = subprocess.run([str(Path(sys.executable).parent / "ufcctl"), "images", "preheat", "--inventory",
                           str(inventory), ref, "--batch", str(batch), "--by", "tor", "--output", "json"],
                          capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"ufcctl images preheat {ref}: rc {proc.returncode}\n"
                 f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    nodes = json.loads(proc.stdout)["nodes"]
    return wall, sorted(float(n["seconds"]) for n in nodes if n.get("seconds") is not None)


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile of sorted values (0 when empty)."""
    if not values:
        return 0.0
    return values[min(len(values) - 1, max(0, round(pct / 100 * len(values) + 0.5) - 1))]


def main() -> int:
    record = take_record("bench_preheat")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", type=Path, required=True, help="a deployed lab's inventory directory")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--layer-mib", type=int, default=6)
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000,
                        help="images are new to every cache and node unless a seed is reused")
    parser.add_argument("--batch", type=int, default=50)
    args = parser.parse_args()

    inv = args.inventory
    cache_vars = yaml.safe_load((inv / "group_vars" / "all" / "registry_cache.yml").read_text())
    cached_registry = cache_vars["registry_cache_upstreams"][0]["registry"]
    address = cached_registry.rsplit(":", 1)[0]
    lab = yaml.safe_load((inv / "group_vars" / "all" / "cluster.yml").read_text())["ufc_lab_name"]
    mirror = npu_mirror_name(lab)
    hosts = yaml.safe_load((inv / "hosts.yml").read_text())["all"]["children"]
    workers = len(hosts["npu_node"]["hosts"])
    cache_hosts = hosts.get("registry_cache", {}).get("hosts") or {}
    caches = len(cache_hosts)
    pod_caches = sum(1 for v in cache_hosts.values() if (v or {}).get("registry_cache_tier") == "super_pod")

    # the cached registry (started by the image tests or by hand) and the direct one
    for port, log, root in ((int(cached_registry.rsplit(":", 1)[1]), registry.LOG_PATH, registry.ROOT_DIR),
                            (DIRECT_PORT, DIRECT_LOG, registry.ROOT_DIR + "-direct")):
        try:
            registry.wait_ready(f"http://{address}:{port}", timeout=1)
        except TimeoutError:
            script = registry.start_script(port, config_path=f"/etc/ufc-lab-upstream-{port}.yml",
                                           log_path=log, root_dir=root)
            subprocess.run(["podman", "exec", mirror, "sh", "-c", script], check=True, capture_output=True)
            registry.wait_ready(f"http://{address}:{port}")

    cached_image = build_image(seed=args.seed, layers=args.layers, layer_bytes=args.layer_mib * MIB)
    direct_image = build_image(seed=args.seed + 1, layers=args.layers, layer_bytes=args.layer_mib * MIB)
    cached_ref = push_image(f"http://{cached_registry}", "bench/preheat", f"s{args.seed}",
                            cached_image).reference
    direct_ref = push_image(f"http://{address}:{DIRECT_PORT}", "bench/preheat", f"s{args.seed}",
                            direct_image).reference

    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}; "
          f"load average at start {os.getloadavg()[0]:.1f}")
    print(f"lab {lab}: {workers} workers, {caches} registry caches ({pod_caches} super pod); "
          f"image {cached_image.size / MIB:.1f} MiB "
          f"({args.layers} layers of {args.layer_mib} MiB, random bytes), seed {args.seed}")
    cached_wall, cached_nodes = _preheat(inv, cached_ref, args.batch)
    cached_bytes, cached_gets = _upstream_bytes(mirror, registry.LOG_PATH, cached_image)
    bench_vars = inv / BENCH_VARS
    # no hosts.toml for the direct registry: ctr needs --plain-http for an http upstream
    bench_vars.write_text(yaml.safe_dump({"image_preheat_plain_http": True}))
    try:
        direct_wall, direct_nodes = _preheat(inv, direct_ref, args.batch)
    finally:
        bench_vars.unlink()
    direct_bytes, direct_gets = _upstream_bytes(mirror, DIRECT_LOG, direct_image)

    size = cached_image.size
    fills = cached_gets / len(cached_image.blobs) / max(pod_caches, 1)
    sides = (("through caches", cached_wall, cached_bytes, cached_gets, cached_nodes),
             ("direct", direct_wall, direct_bytes, direct_gets, direct_nodes))
    for label, wall, up, gets, nodes in sides:
        print(f"{label + ':':<16}wall {wall:.1f} s, upstream {up / MIB:.1f} MiB ({gets} blob GETs, "
              f"{up / size:.2f} x the image); node time p50 {percentile(nodes, 50):.1f} s, "
              f"p90 {percentile(nodes, 90):.1f} s, max {percentile(nodes, 100):.1f} s")
    print(f"direct / caches: upstream bytes {direct_bytes / cached_bytes:.2f}x, "
          f"wall {direct_wall / cached_wall:.2f}x")
    print(f"upstream fetches per blob per super pod cache: {fills:.2f} (issue 31's bar: 1)")
    # the same arithmetic at the target size: one ToR cache per 8 nodes and one per super pod of 128;
    # the upstream fills the super pod caches only (each ToR cache fills from its super pod's)
    nodes, tor_caches, super_pods = 16_000, 2_000, 125
    before = 2 * (tor_caches + super_pods)  # every cache from the upstream, twice (measured before issue 31)
    print(f"projection, {nodes:,} workers with {tor_caches:,} ToR + {super_pods} super pod caches: "
          f"the upstream sends an image {fills * super_pods:.0f} times (direct: {nodes:,}; "
          f"before the chained tiers: {before:,}): {nodes / (fills * super_pods):.0f}x fewer upstream bytes "
          f"than direct pulls; each "
          f"super pod cache sends it to its {tor_caches // super_pods} ToR caches once each")
    print(f"load average at end {os.getloadavg()[0]:.1f}")
    record.figure("through caches wall", cached_wall, "s")
    record.figure("direct wall", direct_wall, "s")
    record.figure("through caches upstream bytes / image", cached_bytes / size, "x")
    record.figure("direct upstream bytes / image", direct_bytes / size, "x")
    record.figure("upstream fetches per blob per super pod cache", fills, "x")
    for label, values in (("through caches", cached_nodes), ("direct", direct_nodes)):
        for pct in (50, 90, 100):
            record.figure(f"{label} node time p{pct}", percentile(values, pct), "s")
    record.figure("projected upstream sends per image at 16,000 nodes", fills * super_pods, "x")
    record.ratio("direct / caches upstream bytes", direct_bytes / cached_bytes)
    record.ratio("direct / caches wall", direct_wall / cached_wall)
    record.ratio("projected direct / caches upstream bytes at 16,000 nodes",
                 nodes / (fills * super_pods))
    record.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
