"""Image distribution on the shared deployed lab: `ufcctl images preheat` through the registry caches.

The lab (tests/integration/conftest.py, the stack) carries two caches (roles/registry_cache, deployed
by the stack's `ufcctl deploy`): the ToR cache of the first ToR on cp2 (workers w01, w02) and the
super pod cache of every super pod on cp3 (every worker; w03.. have no ToR cache). Each worker's
containerd lists its caches in hosts.toml, nearest first (roles/container_runtime). The ToR cache fills
from the super pod cache (each cache host's nginx front: one fetch per blob, the upstream when the
super pod cache does not answer), and a preheat warms the super pod cache first. The upstream is
the LAB UPSTREAM REGISTRY (tests/lab_standins/upstream_registry: Debian's docker-registry, test code)
started here in
the NPU emulator's mirror container, holding test images built from seeded random bytes (nothing is
downloaded from outside). Its access log says which client fetched which blob: the caches, never
the workers. The pre-heat fetches content without unpacking (the lab's choice, for CPU: nodes can mount)
(`image_preheat_unpack: false`, ctr content fetch through the same hosts.toml mirrors).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml

from tests.helpers.lab import STACK_LAB, STACK_WORKERS, Stack, ufcctl
from tests.lab_standins.upstream_registry import registry
from tests.lab_standins.upstream_registry.image import TestImage, build_image
from tests.lab_standins.upstream_registry.lab import serve_test_image
from tests.lab_standins.upstream_registry.push import push_image
from ufcctl.lab.layout import npu_mirror_name

pytestmark = pytest.mark.integration

WORKERS = [f"{STACK_LAB}-w{i:02d}" for i in range(1, STACK_WORKERS + 1)]
TOR_CACHE, POD_CACHE = f"{STACK_LAB}-cp2", f"{STACK_LAB}-cp3"
MIRROR = npu_mirror_name(STACK_LAB)  # the lab NPU emulator's mirror container
INSTANCE = "ufcctl-registry-cache@lab"


@dataclass(frozen=True)
class Upstream:
    address: str
    first: TestImage
    first_ref: str
    second: TestImage
    second_ref: str
    ips: dict[str, str]  # host name -> address


def _exec(container: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["podman", "exec", container, *cmd], capture_output=True, text=True, timeout=120,
                          check=False)
    assert not check or proc.returncode == 0, f"{container}: {' '.join(cmd)}: {proc.stdout}{proc.stderr}"
    return proc


def _blobs_by_client(image: TestImage) -> dict[str, int]:
    """Successful upstream GETs of this image's blobs, per client address."""
    wanted = set(image.blobs)
    counts: dict[str, int] = {}
    for req in registry.requests(registry.read_log(MIRROR)):
        path = req.uri.split("?")[0]
        if req.method == "GET" and req.status == 200 and any(path.endswith(d) for d in wanted):
            counts[req.remote] = counts.get(req.remote, 0) + 1
    return counts


def _fetches(image: TestImage) -> Counter[tuple[str, str]]:
    """Successful upstream GETs of this image's blobs, per (client address, blob digest)."""
    return Counter((req.remote, req.uri.split("?")[0].rsplit("/", 1)[-1])
                   for req in registry.requests(registry.read_log(MIRROR))
                   if req.method == "GET" and req.status == 200
                   and req.uri.split("?")[0].rsplit("/", 1)[-1] in image.blobs)


def _once_per_super_pod_cache(upstream: Upstream, image: TestImage) -> None:
    """Issue 31's bar: the upstream sent each blob of the image exactly once, to the super pod cache."""
    pod = upstream.ips[POD_CACHE]
    assert _fetches(image) == Counter({(pod, digest): 1 for digest in image.blobs}), _fetches(image)


def _has(worker: str, digest: str) -> bool:
    listing = _exec(worker, "ctr", "-n", "k8s.io", "images", "ls").stdout
    return any(digest in line.split() for line in listing.splitlines()[1:])


def _preheat(stack: Stack, ref: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict | None]:
    proc = ufcctl(["images", "preheat", "--inventory", str(stack.inventory), ref, "--batch", "2",
                   "--by", "tor", "--output", "json", *extra], stack.env, timeout=1200)
    try:
        return proc, json.loads(proc.stdout)
    except json.JSONDecodeError:
        return proc, None


@pytest.fixture(scope="module")
def upstream(stack: Stack) -> Iterator[Upstream]:
    stack.require_deployed()
    hosts = yaml.safe_load((stack.inventory / "group_vars" / "all" / "registry_cache.yml").read_text())
    address = hosts["registry_cache_upstreams"][0]["registry"].split(":")[0]
    push, first = serve_test_image(MIRROR, address)
    second = build_image(seed=2)
    pushed = push_image(f"http://{address}:{registry.DEFAULT_PORT}", "lab/preheat-test", "v2", second)
    inventory = yaml.safe_load((stack.inventory / "hosts.yml").read_text())
    ips = {name: vars_["ansible_host"] for group in inventory["all"]["children"].values()
           for name, vars_ in (group.get("hosts") or {}).items() if vars_ and "ansible_host" in vars_}
    yield Upstream(address, first, push.reference, second, pushed.reference, ips)
    _exec(TOR_CACHE, "systemctl", "start", INSTANCE, check=False)  # never leave a cache stopped


def test_dry_run_plans_one_fill_per_super_pod_cache(stack: Stack, upstream: Upstream) -> None:
    proc = ufcctl(["images", "preheat", "--inventory", str(stack.inventory), upstream.first_ref, "--dry-run"],
                  stack.env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "registry caches: 2 of 2 serve at least one target node" in proc.stdout, proc.stdout
    # the ToR cache fills from the super pod cache: one fill from the upstream
    assert f"{upstream.first_ref}: 24.0 MiB x 1 cache(s) = 24.0 MiB" in proc.stdout, proc.stdout
    assert _blobs_by_client(upstream.first) == {}  # the dry run read the manifest only


def test_preheat_fills_each_cache_from_upstream_and_workers_pull_from_their_caches(
        stack: Stack, upstream: Upstream) -> None:
    proc, data = _preheat(stack, upstream.first_ref)
    assert proc.returncode == 0 and data is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert data["status"] == "done" and data["counts"]["done"] == STACK_WORKERS, data
    for worker in WORKERS:
        assert _has(worker, upstream.first.manifest_digest), worker
    # only the super pod cache went to the upstream, each blob exactly once (its front collapses
    # docker-registry 2.8's two fetches of a missed blob); the ToR cache filled from it
    _once_per_super_pod_cache(upstream, upstream.first)
    assert upstream.ips[TOR_CACHE] in _cache_clients(POD_CACHE)
    # each worker went to its nearest cache: w01/w02 to the ToR cache, w03 to the super pod cache
    assert _cache_clients(TOR_CACHE) >= {upstream.ips[w] for w in WORKERS[:2]}
    assert upstream.ips[WORKERS[2]] in _cache_clients(POD_CACHE)


def test_a_second_preheat_changes_nothing_and_fetches_nothing_upstream(stack: Stack,
                                                                        upstream: Upstream) -> None:
    before = _blobs_by_client(upstream.first)
    proc, data = _preheat(stack, upstream.first_ref)
    assert proc.returncode == 0 and data is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert data["counts"]["done"] == STACK_WORKERS and data["changed"] == 0, data
    assert _blobs_by_client(upstream.first) == before


def test_a_stopped_tor_cache_sends_its_workers_to_the_super_pod_cache(stack: Stack,
                                                                       upstream: Upstream) -> None:
    _exec(TOR_CACHE, "systemctl", "stop", INSTANCE)
    try:
        proc, data = _preheat(stack, upstream.second_ref)
    finally:
        _exec(TOR_CACHE, "systemctl", "start", INSTANCE)
    assert proc.returncode == 0 and data is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert data["counts"]["done"] == STACK_WORKERS, data
    assert f"NOT warmed: {TOR_CACHE}" in data["steps"]["prepare"], data["steps"]
    for worker in WORKERS:
        assert _has(worker, upstream.second.manifest_digest), worker
    # the super pod cache alone filled from upstream, once per blob; no worker went there itself
    _once_per_super_pod_cache(upstream, upstream.second)


def test_a_tor_cache_stopped_mid_run_costs_no_worker(stack: Stack, upstream: Upstream) -> None:
    # one worker at a time; the ToR cache stops as soon as w01 asks it for the manifest (a watcher
    # on the cache host's journal), so w01's blobs and all of w02 (same ToR) come through the next
    # mirror of their hosts.toml: the super pod cache
    seed = 3000 + int(time.time()) % 100000  # new to every cache and worker, also when the module runs again
    third = build_image(seed=seed)
    ref = push_image(f"http://{upstream.address}:{registry.DEFAULT_PORT}", "lab/preheat-test", f"s{seed}",
                     third).reference
    first = upstream.ips[WORKERS[0]].replace(".", "\\.")
    # ends by itself: journalctl on its next line once grep matched (the stop logs one), else at timeout
    watch = (f"timeout 900 journalctl -f -n 0 -o cat -u {INSTANCE} | "
             f"{{ grep -m1 -qE 'remoteaddr=\"?{first}:.*manifests'; systemctl stop {INSTANCE}; }}")
    watcher = subprocess.Popen(["podman", "exec", TOR_CACHE, "sh", "-c", watch],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)  # journalctl follows before the first request
    try:
        proc = ufcctl(["images", "preheat", "--inventory", str(stack.inventory), ref, "--batch", "1",
                       "--window", "1", "--by", "tor", "--output", "json"], stack.env, timeout=1200)
        stopped = _exec(TOR_CACHE, "systemctl", "is-active", INSTANCE, check=False).stdout.strip()
    finally:
        _exec(TOR_CACHE, "systemctl", "start", INSTANCE)
        try:
            watcher.wait(timeout=30)
        except subprocess.TimeoutExpired:
            watcher.kill()
    assert stopped != "active", "the ToR cache was never stopped"
    data = json.loads(proc.stdout)
    assert proc.returncode == 0 and data["counts"]["done"] == STACK_WORKERS, proc.stdout[-3000:] + proc.stderr
    for worker in WORKERS:
        assert _has(worker, third.manifest_digest), worker
    # w02 (the ToR cache's second worker) fetched through a cache, never the upstream itself: the super
    # pod cache once the ToR cache had stopped, or the ToR cache when the stop came later (the watcher acts
    # on w01's journal line, which under load can reach the journal after w02's pull started; a stopped
    # cache's fallback is proven without a race by the test above); the upstream still sent each blob once
    w02 = upstream.ips[WORKERS[1]]
    assert w02 in _cache_clients(POD_CACHE, third) | _cache_clients(TOR_CACHE, third), w02
    _once_per_super_pod_cache(upstream, third)


def test_an_image_the_upstream_lacks_fails_at_the_caches_and_touches_no_worker(stack: Stack,
                                                                                upstream: Upstream) -> None:
    missing = f"{upstream.address}:{registry.DEFAULT_PORT}/lab/preheat-test:no-such-tag"
    proc, _ = _preheat(stack, missing)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "warming registry cache(s)" in proc.stderr and "HTTP 404" in proc.stderr, proc.stderr
    assert "no worker was touched" in proc.stderr, proc.stderr
    for worker in WORKERS:
        assert "no-such-tag" not in _exec(worker, "ctr", "-n", "k8s.io", "images", "ls").stdout


def _cache_clients(cache: str, image: TestImage | None = None) -> set[str]:
    """Clients that fetched blobs (of `image`, else any) from a cache instance (its 'response completed'
    lines in the journal)."""
    lines = _exec(cache, "journalctl", "-u", INSTANCE, "-o", "cat", "--no-pager").stdout.splitlines()
    return {r.remote for r in registry.requests(lines, registry.APP)
            if r.method == "GET" and r.status == 200 and "/blobs/" in r.uri
            and (image is None or r.uri.split("?")[0].rsplit("/", 1)[-1] in image.blobs)}


def test_a_real_container_runs_on_a_worker_from_an_image_pulled_through_its_caches(
        stack: Stack, upstream: Upstream) -> None:
    """The lab node runs containers (docs/reference/real-kubernetes.md §3): the lab's pause image (built
    from tests/lab_build/pause) is pushed to the LAB UPSTREAM REGISTRY, containerd on a worker pulls it
    through its super pod cache with the node's hosts.toml mirrors and unpacks it (overlayfs on the node's
    containerd volume), and runc starts it: a process of the image runs in its own PID namespace."""
    from tests.lab_build.build import build
    from tests.lab_build.components import PAUSE
    from tests.lab_build.images import pause_image

    image = pause_image(build(PAUSE, say=lambda _: None).binary("pause").read_bytes())
    pushed = push_image(f"http://{upstream.address}:{registry.DEFAULT_PORT}", "lab/pause", image.tag, image)
    worker, name = WORKERS[2], "ufcctl-lab-pause"  # w03: no ToR cache, so its super pod cache
    _exec(worker, "ctr", "-n", "k8s.io", "task", "kill", "-s", "SIGKILL", name, check=False)
    _exec(worker, "ctr", "-n", "k8s.io", "containers", "delete", name, check=False)
    _exec(worker, "ctr", "-n", "k8s.io", "images", "pull", "--hosts-dir", "/etc/containerd/certs.d",
          pushed.reference)
    try:
        _exec(worker, "ctr", "-n", "k8s.io", "run", "-d", pushed.reference, name)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            tasks = _exec(worker, "ctr", "-n", "k8s.io", "task", "ls").stdout
            if any(line.split()[:1] == [name] and "RUNNING" in line for line in tasks.splitlines()):
                break
            time.sleep(1)
        else:
            pytest.fail(f"{worker}: {name} is not RUNNING: {tasks}")
        pid = _exec(worker, "ctr", "-n", "k8s.io", "task", "ps", name).stdout.split()[2]
        # the image's own program, as the node sees it, under the image's user
        assert _exec(worker, "cat", f"/proc/{pid}/cmdline").stdout.split("\0")[0] == "/pause"
        assert _exec(worker, "stat", "-c", "%u", f"/proc/{pid}").stdout.strip() == "65535"
    finally:
        _exec(worker, "ctr", "-n", "k8s.io", "task", "kill", "-s", "SIGKILL", name, check=False)
        time.sleep(1)
        _exec(worker, "ctr", "-n", "k8s.io", "task", "delete", name, check=False)
        _exec(worker, "ctr", "-n", "k8s.io", "containers", "delete", name, check=False)
    # the worker's bytes came through its cache, never from the upstream itself
    assert upstream.ips[worker] not in _blobs_by_client(image), _blobs_by_client(image)
