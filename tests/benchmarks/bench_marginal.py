"""Marginal controller CPU per node of each fleet kind: N-node runs against one-node runs, same lab.

For a kind, the controller CPU of `ufcctl KIND --limit <one node>` is the run's fixed part plus one
node; the same command over all N nodes is the fixed part plus N nodes. So

    marginal per node = (CPU(N) - CPU(1)) / (N - 1),    fixed = CPU(1) - marginal

with CPU counted in a cgroup (tests/benchmarks/benchlib.py: ufcctl and every descendant, SSH
ControlPersist masters included). Each pair runs `--repeat` times and the medians are used; both
sides of a pair run back to back, so a change of machine load hits both.

Kinds and states:
  upgrade-drivers  on a lab of this benchmark's own (`--lab`, default "cst2", own subnet; brought up
                   and first-installed here, taken down at the end): no-op (every node at target) and
                   upgrading (every node reset one release behind, emulated installs of 0.5 s)
  deploy-nodes     `ufcctl add-nodes` on an already deployed lab (`--shared-inventory`, e.g.
                   inventories/lab under `flock /tmp/ufc-lab.lock`), the nodes joined: no-op (after one
                   unmeasured run, so each node holds the record of a full run: the fast path of
                   playbooks/deploy-nodes.yml where the checkout has one) and, where the checkout has
                   the fast path, full (`--full`: every role on every node, what a changed input
                   costs); the runs must change nothing, else the benchmark fails. A node's record
                   (RECORD) is removed afterwards where the node had none before
  preheat-images   `ufcctl images preheat IMAGE` on the same deployed lab, no-op only (the image is
                   pulled once first, not measured, if a node lacks it)
  npu-check        `ufcctl npu check` on the same deployed lab: tier 1 and `--deep` (tier 2); workers
                   without the driver get it first from `ufcctl upgrade-drivers` (not measured) and are
                   put back driver-less and tainted at the end (tests/helpers/npu_lab.py). Also printed:
                   the median node time of the N-node runs (the state store's started/finished) and a
                   projection to 16,000 nodes at `ufcctl npu check`'s default batch x window

  upgrade-drivers-joined  `ufcctl upgrade-drivers` on the same deployed lab's joined workers WITH the
                   kubeconfig (`--kubeconfig`, default .ufc/lab/admin.conf): the drain around each node.
                   No-op only (workers without the driver get it first, not measured, and are put back
                   driver-less, tainted and unlabelled at the end); also counted, per checkout: the
                   workers seen cordoned while its runs ran (a poll every second) and the pods evicted
                   (a probe Deployment with one pod per worker, tests/helpers/npu_lab.py probe_pods: the
                   pods whose uid changed; an evicted pod's replacement waits for the uncordon)

`--checkout DIR` (repeatable) runs the same measurements with another checkout's ufcctl, playbooks
and roles (e.g. main before a change), interleaved with this one's, so before/after are same-run
ratios.

    python tests/benchmarks/bench_marginal.py [--kinds upgrade-drivers,deploy-nodes,preheat-images]
        [--nodes 6] [--repeat 1] [--lab cst2 --subnet 10.89.93.0/24] [--shared-inventory PATH
        --shared-state DIR] [--image REF] [--checkout DIR ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import Measured, check, machine, measured, take_record  # noqa: E402

from tests.lab_standins.npu_emulator.lab import set_installed, write_faults  # noqa: E402
from tests.lab_standins.npu_emulator.packages import RELEASES  # noqa: E402

BIN = Path(sys.executable).parent
UFCCTL = str(BIN / "ufcctl")  # with PYTHONPATH set to the checkout measured
KINDS = ("upgrade-drivers", "deploy-nodes", "preheat-images", "npu-check", "upgrade-drivers-joined")
FLEET = 16000
NPU_CHECK_CONCURRENCY = 50 * 4  # ufcctl/cli/npu.py DEFAULT_BATCH x DEFAULT_WINDOW
# A real `hccn_tool -ping ... pkt 3` lasts about 3 s (one packet a second, then the last reply); under a
# ToR of 16 servers each chip pings 15 peers, the chips at once (module_utils/ufcctl_hccn.py Fabric.ping).
REAL_PING_SECONDS, TOR_PEERS = 3.0, 15
RECORD = "/var/lib/ufcctl/deploy-nodes.json"  # playbooks/deploy-nodes.yml's ufc_node_state_record


@dataclass(frozen=True)
class Pair:
    kind: str
    state: str  # "no-op" or "upgrading"
    checkout: str  # label of the checkout measured
    one: float  # median CPU-s of the one-node runs
    all: float  # median CPU-s of the N-node runs
    nodes: int
    wall_one: float
    wall_all: float

    @property
    def marginal(self) -> float:
        return (self.all - self.one) / (self.nodes - 1)

    @property
    def fixed(self) -> float:
        return self.one - self.marginal


def _env(checkout: Path, extra: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **extra,
            "PYTHONPATH": os.pathsep.join(p for p in (str(checkout), os.environ.get("PYTHONPATH")) if p),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def _ufcctl(checkout: Path, env: dict[str, str], args: list[str], what: str) -> Measured:
    run = measured([UFCCTL, *args], env, checkout)
    check(what, run.proc)
    return run


def _changed_nodes(run: Measured) -> int:
    data = json.loads(run.proc.stdout)
    nodes = data.get("nodes")
    if not isinstance(nodes, list):  # deploy's shape: {"nodes": {"nodes": [...]}}
        nodes = (nodes or {}).get("nodes", [])
    return sum(1 for n in nodes if n.get("changed"))


def _pair(kind: str, state: str, label: str, nodes: list[str], repeat: int, run_one, run_all) -> Pair:
    ones: list[Measured] = []
    alls: list[Measured] = []
    for _ in range(repeat):
        ones.append(run_one())
        alls.append(run_all())
    pair = Pair(kind, state, label, statistics.median(m.cpu for m in ones),
                statistics.median(m.cpu for m in alls), len(nodes), statistics.median(m.wall for m in ones),
                statistics.median(m.wall for m in alls))
    print(f"  {kind:<16} {state:<10} {label:<10} 1 node {pair.one:6.2f} CPU-s {pair.wall_one:6.1f} s | "
          f"{pair.nodes} nodes {pair.all:6.2f} CPU-s {pair.wall_all:6.1f} s | marginal {pair.marginal:5.3f} "
          f"CPU-s/node, fixed {pair.fixed:5.2f}  (load {os.getloadavg()[0]:.1f})", flush=True)
    return pair


def _drivers(args: argparse.Namespace, checkouts: list[tuple[str, Path]], work: Path) -> list[Pair]:
    workers = [f"{args.lab}-w{i:02d}" for i in range(1, args.nodes + 1)]
    inventory = work / "inventory"
    base = {"UFC_STATE_DIR": str(work / "state"), "UFC_LAB_NAME": args.lab,
            "UFC_LAB_INVENTORY": str(inventory),
            "KUBECONFIG": str(work / "none"), "UFC_LAB_MONITORING": "0",
            "CONTAINERS_CONF": str(ROOT / "ufcctl" / "lab" / "containers.conf")}
    env0 = _env(ROOT, base)
    old, new = RELEASES
    up = subprocess.run([UFCCTL, "lab", "up", "--lab", args.lab, "--nodes",
                         str(args.nodes), "--subnet", args.subnet, "--no-monitoring", "--inventory-dir",
                         str(inventory)], env=env0, cwd=ROOT, capture_output=True, text=True, check=False)
    check("lab up", up)
    pairs: list[Pair] = []
    try:
        common = ["upgrade-drivers", "-i", str(inventory), "--batch", str(args.nodes), "--output", "json",
                  "--version", new.driver_version, "--firmware-version", new.firmware_version]
        first = subprocess.run([UFCCTL, *common], env={**env0, "UFC_STATE_DIR": str(
            work / "first")}, cwd=ROOT, capture_output=True, text=True, check=False)
        check("first install (not measured)", first)
        for worker in workers:
            write_faults(worker, {"driver_seconds": 0.5})

        for label, checkout in checkouts:
            env = _env(checkout, base)

            def noop(limit: list[str], env=env, checkout=checkout) -> Measured:
                run = _ufcctl(checkout, env, [*common, *limit], "upgrade-drivers no-op")
                if _changed_nodes(run):
                    sys.exit(f"upgrade-drivers no-op changed a node:\n{run.proc.stdout[-3000:]}")
                return run

            def upgrading(limit: list[str], env=env, checkout=checkout) -> Measured:
                for worker in (workers[:1] if limit else workers):
                    set_installed(worker, old)
                run = _ufcctl(checkout, env, [*common, *limit], "upgrade-drivers upgrading")
                want = 1 if limit else len(workers)
                if _changed_nodes(run) != want:
                    sys.exit(f"upgrade-drivers upgraded {_changed_nodes(run)} nodes, expected {want}")
                return run

            one = ["--limit", workers[0]]
            pairs.append(_pair("upgrade-drivers", "no-op", label, workers, args.repeat,
                               lambda one=one: noop(one), lambda: noop([])))
            pairs.append(_pair("upgrade-drivers", "upgrading", label, workers, args.repeat,
                               lambda one=one: upgrading(one), lambda: upgrading([])))
    finally:
        down = subprocess.run([UFCCTL, "lab", "down", "--lab", args.lab], env=env0,
                              cwd=ROOT, capture_output=True, text=True, check=False)
        check("lab down", down)
    return pairs


def _shared_workers(inventory: Path) -> list[str]:
    from ufcctl.app.inventory import load_inventory
    inv = load_inventory(inventory)
    cps = set(inv.group_hosts("kube_control_plane"))
    return [h for h in inv.group_hosts("kube_node") if h not in cps]


def _images(worker: str) -> str:
    proc = subprocess.run(["podman", "exec", worker, "ctr", "-n", "k8s.io", "images", "ls", "-q"],
                          capture_output=True, text=True, check=False)
    return proc.stdout


def _has_record(worker: str) -> bool:
    return subprocess.run(["podman", "exec", worker, "test", "-e", RECORD], capture_output=True,
                          check=False).returncode == 0


def _remove_image(workers: list[str], image: str, keep: dict[str, set[str]] | None = None) -> None:
    """Remove the image from the workers' containerd, with the record containerd's CRI plugin names by
    digest: every image record a worker did not hold before (`keep`) goes."""
    for worker in workers:
        names = {image} | {n for n in _images(worker).split() if n.startswith("sha256:")}
        for name in sorted(names - (keep or {}).get(worker, set())):
            subprocess.run(["podman", "exec", worker, "ctr", "-n", "k8s.io", "images", "rm", name],
                           capture_output=True, text=True, check=False)


def _ensure_image(workers: list[str], image: str, preheat) -> None:
    """Every worker holds the image before the no-op runs (a first preheat, not measured)."""
    missing = [w for w in workers if image not in _images(w).split()]
    if missing:
        preheat(":".join(missing), len(missing))


def _shared(args: argparse.Namespace, kinds: list[str], checkouts: list[tuple[str, Path]],
            record) -> list[Pair]:
    inventory = Path(args.shared_inventory).resolve()
    state = Path(args.shared_state).resolve()
    workers = _shared_workers(inventory)
    pairs: list[Pair] = []
    before = {w: set(_images(w).split()) for w in workers}  # what the lab held: left as it was
    recorded = {w: _has_record(w) for w in workers}
    if "preheat-images" in kinds:
        from tests.lab_standins.upstream_registry.lab import serve_test_image
        registry, address = args.serve.split(",")
        served = serve_test_image(registry, address)[0].reference
        if served != args.image:
            sys.exit(f"the lab serves {served}, not --image {args.image}")
    for label, checkout in checkouts:
        env = _env(checkout, {"UFC_STATE_DIR": str(state)})
        if "deploy-nodes" in kinds:
            def nodes(limit: str, *extra: str, env=env, checkout=checkout) -> Measured:
                run = _ufcctl(checkout, env, ["add-nodes", "-i", str(inventory), "--limit", limit,
                                              "--output", "json", *extra], "add-nodes no-op")
                if _changed_nodes(run):
                    sys.exit(f"add-nodes no-op changed a node on the shared lab:\n{run.proc.stdout[-3000:]}")
                return run
            nodes(":".join(workers))  # not measured: every node's record of a full run
            pairs.append(_pair("deploy-nodes", "no-op", label, workers, args.repeat,
                               lambda: nodes(workers[0]), lambda: nodes(":".join(workers))))
            if "ufc_node_state" in (checkout / "playbooks" / "deploy-nodes.yml").read_text():
                pairs.append(_pair("deploy-nodes", "full", label, workers, args.repeat,
                                   lambda: nodes(workers[0], "--full"),
                                   lambda: nodes(":".join(workers), "--full")))
        if "preheat-images" in kinds:
            def preheat(limit: str, want: int, env=env, checkout=checkout) -> Measured:
                run = _ufcctl(checkout, env, ["images", "preheat", "-i", str(inventory), args.image,
                                              "--limit", limit, "--output", "json"], "images preheat")
                if _changed_nodes(run) != want:
                    sys.exit(f"preheat pulled on {_changed_nodes(run)} nodes, expected {want}:\n"
                             f"{run.proc.stdout[-3000:]}")
                return run

            def pulling(limit: list[str], preheat=preheat) -> Measured:
                _remove_image(limit, args.image, before)
                return preheat(":".join(limit), len(limit))

            _ensure_image(workers, args.image, preheat)
            pairs.append(_pair("preheat-images", "no-op", label, workers, args.repeat,
                               lambda: preheat(workers[0], 0), lambda: preheat(":".join(workers), 0)))
            pairs.append(_pair("preheat-images", "pulling", label, workers, args.repeat,
                               lambda: pulling(workers[:1]), lambda: pulling(workers)))
    if "npu-check" in kinds:
        pairs += _npu_check(inventory, state, workers, args.repeat, checkouts)
    if "upgrade-drivers-joined" in kinds:
        pairs += _joined_drivers(inventory, state, workers, args.repeat, Path(args.kubeconfig).resolve(),
                                 checkouts, record)
    if "preheat-images" in kinds:  # leave the lab's workers as they were
        _remove_image([w for w in workers if args.image not in before[w]], args.image, before)
    for worker in (w for w in workers if not recorded[w]):
        subprocess.run(["podman", "exec", worker, "rm", "-f", RECORD], capture_output=True, check=False)
    return pairs


def _node_seconds(state: Path, kind: str) -> float:
    """Median node time (finished - started) of the newest run of `kind` in the state store."""
    from ufcctl.rollout.store import StateStore

    with StateStore(state / "state.db") as store:
        run = store.runs(kind)[0]
        times = [n.seconds for n in store.nodes(run.run_id) if n.seconds is not None]
    return statistics.median(times) if times else float("nan")


def _npu_check(inventory: Path, state: Path, workers: list[str], repeat: int,
               checkouts: list[tuple[str, Path]]) -> list[Pair]:
    from tests.helpers.npu_lab import driverless, restore
    from ufcctl.app.inventory import load_inventory
    cp1 = load_inventory(inventory).group_hosts("kube_control_plane")[0]
    fresh = driverless(workers)
    pairs: list[Pair] = []
    try:
        if fresh:  # not measured: the driver, device IPs and tier 1 admission on the driver-less workers
            _ufcctl(ROOT, _env(ROOT, {"UFC_STATE_DIR": str(state)}),
                    ["upgrade-drivers", "-i", str(inventory), "--limit", ":".join(fresh), "--batch",
                     str(len(fresh)), "--max-fail", "100%"], "upgrade-drivers (the driver for npu check)")
        for label, checkout in checkouts:
            if not (checkout / "playbooks" / "npu-check.yml").exists():
                continue
            env = _env(checkout, {"UFC_STATE_DIR": str(state)})
            for state_name, extra in (("tier 1", []), ("deep", ["--deep"])):
                def check(limit: str, extra=extra, env=env, checkout=checkout) -> Measured:
                    return _ufcctl(checkout, env, ["npu", "check", "-i", str(inventory), "--limit", limit,
                                                   "--output", "json", *extra], "npu check")
                pair = _pair("npu-check", state_name, label, workers, repeat,
                             lambda check=check: check(workers[0]),
                             lambda check=check: check(":".join(workers)))
                pairs.append(pair)
                node = _node_seconds(state, "npu-check")
                waves = -(-FLEET // NPU_CHECK_CONCURRENCY)
                cpu_h = (pair.fixed + FLEET * pair.marginal) / 3600
                real = TOR_PEERS * REAL_PING_SECONDS if state_name == "deep" else 0.0
                cores = os.cpu_count() or 1
                pings = (f" (+{real:.0f} s a node for real pings: {TOR_PEERS} peers x "
                         f"{REAL_PING_SECONDS:.0f} s)" if real else "")
                print(f"    node time {node:.1f} s (lab); at {FLEET} nodes: controller {cpu_h:.2f} CPU-h "
                      f"({cpu_h / cores:.2f} h on this machine's {cores} cores if CPU-bound), {waves} waves "
                      f"of {NPU_CHECK_CONCURRENCY} x {node + real:.0f} s = {waves * (node + real) / 60:.0f} "
                      f"min node-bound{pings}", flush=True)
    finally:
        restore(fresh, cp1)
    return pairs


def _joined_drivers(inventory: Path, state: Path, workers: list[str], repeat: int, kubeconfig: Path,
                    checkouts: list[tuple[str, Path]], record) -> list[Pair]:
    from tests.helpers.npu_lab import CordonWatch, driverless, movable_pods, probe_pods, restore
    from ufcctl.app.inventory import load_inventory
    cp1 = load_inventory(inventory).group_hosts("kube_control_plane")[0]
    extra = {"UFC_STATE_DIR": str(state), "KUBECONFIG": str(kubeconfig)}
    common = ["upgrade-drivers", "-i", str(inventory), "--batch", str(len(workers)), "--output", "json"]
    fresh = driverless(workers)
    pairs: list[Pair] = []
    try:
        if fresh:  # not measured: the driver and the admission (it labels the Nodes), driver-less workers
            _ufcctl(ROOT, _env(ROOT, extra), [*common, "--limit", ":".join(fresh), "--max-fail", "100%"],
                    "upgrade-drivers (the driver, joined workers)")
        for label, checkout in checkouts:
            env = _env(checkout, extra)

            def noop(limit: str, env=env, checkout=checkout) -> Measured:
                run = _ufcctl(checkout, env, [*common, "--limit", limit], "upgrade-drivers no-op (joined)")
                if _changed_nodes(run):
                    sys.exit(f"upgrade-drivers no-op changed a node:\n{run.proc.stdout[-3000:]}")
                return run

            with probe_pods(cp1, workers) as pods, CordonWatch(cp1, workers) as watch:
                pairs.append(_pair("upgrade-drivers", "no-op joined", label, workers, repeat,
                                   lambda noop=noop: noop(workers[0]),
                                   lambda noop=noop: noop(":".join(workers))))
                evicted = len(set(pods) - set(movable_pods(cp1, workers)))
            runs = 2 * repeat
            print(f"    {label}: workers seen cordoned {len(watch.seen)}/{len(workers)}, pods evicted "
                  f"{evicted} (of {len(pods)} movable on the workers) in {runs} runs", flush=True)
            name = "upgrade-drivers no-op joined" + ("" if label == "this" else f" ({label})")
            record.figure(f"{name} workers cordoned", len(watch.seen), "nodes")
            record.figure(f"{name} pods evicted", evicted, "pods")
    finally:
        restore(fresh, cp1)
    return pairs


def main() -> None:
    record = take_record("bench_marginal")
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--kinds", default="upgrade-drivers")
    parser.add_argument("--nodes", type=int, default=6, help="workers of the own lab (upgrade-drivers)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--lab", default=os.environ.get("UFC_LAB_NAME_BENCH", "cst2"))
    parser.add_argument("--subnet", default="10.89.93.0/24")
    parser.add_argument("--shared-inventory", default=str(ROOT / "inventories" / "lab"))
    parser.add_argument("--shared-state", default=str(ROOT / ".ufc"))
    parser.add_argument("--image", default="10.89.64.5:5000/lab/preheat-test:v1")
    parser.add_argument("--serve", default="ufc-hdk-mirror,10.89.64.5",
                        help="container,address of the lab upstream registry serving --image")
    parser.add_argument("--checkout", action="append", default=[], help="another checkout, measured too")
    parser.add_argument("--kubeconfig", default=str(ROOT / ".ufc" / "lab" / "admin.conf"),
                        help="the shared lab's kubeconfig (upgrade-drivers-joined)")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        sys.exit(f"unknown kinds {unknown}; known: {', '.join(KINDS)}")
    checkouts = [(Path(c).resolve().name, Path(c).resolve()) for c in args.checkout] + [("this", ROOT)]
    print(machine(), flush=True)
    pairs: list[Pair] = []
    if "upgrade-drivers" in kinds:
        with tempfile.TemporaryDirectory() as tmp:
            pairs += _drivers(args, checkouts, Path(tmp))
    shared = [k for k in kinds if k != "upgrade-drivers"]
    if shared:
        pairs += _shared(args, shared, checkouts, record)
    print(machine())
    print("marginal controller CPU per node (aims: <= 0.2 CPU-s no-op, <= 0.5 upgrading):")
    for p in pairs:
        print(f"  {p.kind:<16} {p.state:<10} {p.checkout:<10} marginal {p.marginal:.3f} CPU-s/node, fixed "
              f"{p.fixed:.2f} CPU-s (1 node {p.one:.2f}, {p.nodes} nodes {p.all:.2f})")
        name = f"{p.kind} {p.state}" + ("" if p.checkout == "this" else f" ({p.checkout})")
        record.figure(f"{name} marginal CPU per node", p.marginal, "CPU-s")
        record.figure(f"{name} fixed CPU", p.fixed, "CPU-s")
    for p in pairs:
        if p.checkout == "this":
            continue
        mine = next((q for q in pairs if q.checkout == "this" and (q.kind, q.state) == (p.kind, p.state)),
                    None)
        if mine and mine.marginal > 0:
            ratio = p.marginal / mine.marginal
            print(f"  {p.kind} {p.state}: {p.checkout}/this marginal {ratio:.2f}x")
            record.ratio(f"{p.kind} {p.state} {p.checkout}/this marginal", ratio)
    record.note = f"{args.nodes if 'upgrade-drivers' in kinds else ''} nodes; repeat {args.repeat}"
    record.write()


if __name__ == "__main__":
    main()
