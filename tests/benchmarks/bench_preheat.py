"""Image pre-heat on a deployed lab: through the registry caches versus every worker pulling from the
upstream itself, same lab, same run, two images of the same size.

Needs a lab deployed with its registry caches (`./scripts/run.sh`, or `ufcctl lab up` + `ufcctl
deploy`); the LAB UPSTREAM REGISTRY (tests/lab_standins/upstream_registry, test code) is started here in
the lab's
mirror container twice: on the cached registry's port (the one `registry_cache_upstreams` names,
so the workers' hosts.toml sends them to their caches) and on a second port no cache mirrors (so
the workers pull from it directly). Both sides run `ufcctl images preheat` with the same flags.
Upstream bytes are counted from each registry's access log (successful blob GETs x blob size).

    python tests/benchmarks/bench_preheat.py --inventory inventories/lab [--layers 4 --layer-mib 6]
"""

from __future__ import annotations

import argparse
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


def _preheat(inventory: Path, ref: str, batch: int) -> float:
    started = time.monotonic()
    proc = subprocess.run([str(Path(sys.executable).parent / "ufcctl"), "images", "preheat", "--inventory",
                           str(inventory), ref, "--batch", str(batch), "--by", "tor"],
                          capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"ufcctl images preheat {ref}: rc {proc.returncode}\n"
                 f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return wall


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
    caches = len(hosts.get("registry_cache", {}).get("hosts") or {})

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
    print(f"lab {lab}: {workers} workers, {caches} registry caches; image {cached_image.size / MIB:.1f} MiB "
          f"({args.layers} layers of {args.layer_mib} MiB, random bytes), seed {args.seed}")
    cached_wall = _preheat(inv, cached_ref, args.batch)
    cached_bytes, cached_gets = _upstream_bytes(mirror, registry.LOG_PATH, cached_image)
    bench_vars = inv / BENCH_VARS
    # no hosts.toml for the direct registry: ctr needs --plain-http for an http upstream
    bench_vars.write_text(yaml.safe_dump({"image_preheat_plain_http": True}))
    try:
        direct_wall = _preheat(inv, direct_ref, args.batch)
    finally:
        bench_vars.unlink()
    direct_bytes, direct_gets = _upstream_bytes(mirror, DIRECT_LOG, direct_image)

    size = cached_image.size
    print(f"through caches: wall {cached_wall:.1f} s, upstream {cached_bytes / MIB:.1f} MiB "
          f"({cached_gets} blob GETs, {cached_bytes / size:.1f} x the image)")
    print(f"direct:         wall {direct_wall:.1f} s, upstream {direct_bytes / MIB:.1f} MiB "
          f"({direct_gets} blob GETs, {direct_bytes / size:.1f} x the image)")
    print(f"direct / caches: upstream bytes {direct_bytes / cached_bytes:.2f}x, "
          f"wall {direct_wall / cached_wall:.2f}x")
    fills = cached_gets / len(cached_image.blobs) / max(caches, 1)
    print(f"upstream fills per cache: {fills:.1f} (docker-registry 2.8 fetches a missing blob twice)")
    # the same arithmetic at the target size: one ToR cache per 8 nodes and one per super pod of 128
    nodes, tor_caches, pod_caches = 16_000, 2_000, 125
    print(f"projection, {nodes:,} workers with {tor_caches:,} ToR + {pod_caches} super pod caches (every "
          f"serving cache warmed, {fills:.1f} fills each): direct / caches = "
          f"{nodes / (fills * (tor_caches + pod_caches)):.1f}x fewer upstream bytes")
    print(f"load average at end {os.getloadavg()[0]:.1f}")
    record.figure("through caches wall", cached_wall, "s")
    record.figure("direct wall", direct_wall, "s")
    record.figure("through caches upstream bytes / image", cached_bytes / size, "x")
    record.figure("direct upstream bytes / image", direct_bytes / size, "x")
    record.ratio("direct / caches upstream bytes", direct_bytes / cached_bytes)
    record.ratio("direct / caches wall", direct_wall / cached_wall)
    record.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
