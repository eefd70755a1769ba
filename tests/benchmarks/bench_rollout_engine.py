"""The fleet engine's own cost at 16,000 nodes, and what the start order buys, with a simulated executor.

Measured: the real engine (inventory load, plan, start order, window, gate socket protocol, state
store, progress output) driving a SIMULATED EXECUTOR, which is test code standing in for
ansible-playbook: one subprocess per chunk, `forks` worker threads taking hosts in inventory order
(as host_pinned does), each asking the engine's real gate with the shipped client
(playbooks/action_plugins/ufc_gate.py), then "running" for its node's duration and reporting the
marker task (or a failure) as one JSON line, which the engine side turns into the runner's
observer call. No Ansible runs, so the cost of parsing real Ansible events (ansible-runner, ~2 per
task) is not in these numbers.

Node durations (simulated seconds): lognormal, median 600 s, sigma 0.25; in each batch one node
takes 10x; one node hangs until its installer timeout (12,000 s, above the 10x nodes) and fails,
as the role does with a hung installer (the engine's own per-node deadline is twice that). Time
is compressed by COMPRESSION (1000: 600 s take 0.6 s), so sleeping is cheap and the engine's work
is what the CPU measures.

Two rollouts of the same fleet, in this order, measured in the same run:
  fifo      --order plan: today's first-in-first-out window (nothing recorded yet either)
  longest   --order longest: longest expected first, from the durations the fifo run recorded
and the zero-overhead list schedules of both orders computed from the same durations, against the
lower bound max(max Ti, sum Ti / C) that no schedule with C slots can beat.

    python tests/benchmarks/bench_rollout_engine.py [NODES=16000] [C=200] [COMPRESSION=1000]

Prints the machine, then per rollout: engine CPU per node (process CPU of the command, the
simulator's subprocesses excluded), state-store writes per second, peak memory (max RSS), the
time from command start to the first node admitted, and the makespans.
"""

from __future__ import annotations

import heapq
import importlib.util
import json
import math
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import take_record  # noqa: E402

MEDIAN = 600.0  # simulated seconds of one node's upgrade
SIGMA = 0.25
SLOW = 10.0  # one node per batch takes this many times its drawn duration
# The hung node fails at the installer timeout, as the role fails a hung installer; the timeout is
# set above the 10x nodes (~6,000 s), which must not time out.
HANG_TIMEOUT = 12000.0
MARKER = "Report the node done to the rollout engine"
BATCHES_OF_C = 1  # batch = C, window 1: one slow node per C nodes


# -- the simulated executor's subprocess ---------------------------------------------------------


def _gate_ask() -> Callable[[str, str], dict[str, Any]]:
    spec = importlib.util.spec_from_file_location(
        "ufc_gate", ROOT / "playbooks" / "action_plugins" / "ufc_gate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ask  # type: ignore[no-any-return]


def simulate(spec_path: str) -> None:
    """One chunk's process: forks workers, hosts in order, gate then sleep then one event line."""
    spec = json.loads(Path(spec_path).read_text())
    ask = _gate_ask()
    hosts: list[str] = spec["hosts"]
    seconds: dict[str, float] = spec["seconds"]
    failing: set[str] = set(spec["failing"])
    lock = threading.Lock()
    queue = list(reversed(hosts))

    def emit(line: dict[str, Any]) -> None:
        with lock:
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()

    def worker() -> None:
        while True:
            with lock:
                if not queue:
                    return
                host = queue.pop()
            try:
                answer = ask(spec["gate"], host)["answer"]
            except (OSError, ValueError):
                return  # the engine went away
            if answer != "go":
                continue
            time.sleep(seconds[host])
            if host in failing:
                emit({"host": host, "task": "Install the driver", "status": "failed",
                      "message": "installer timed out"})
            else:
                emit({"host": host, "task": MARKER, "status": "changed"})

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(spec["forks"], len(hosts)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class SimulatedExecutor:
    """Test code: run_playbook's signature, a subprocess per chunk instead of ansible-playbook."""

    def __init__(self, real_seconds: Mapping[str, float], failing: set[str], work: Path):
        self.real_seconds = real_seconds
        self.failing = failing
        self.work = work
        self.processes = 0
        self.first_launch: float | None = None  # monotonic time of the first process start

    def __call__(self, playbook: Path, hosts: list[Any], options: Any, *, run_id: str, observer: Any,
                 cancel: Callable[[], bool] | None = None, env: Mapping[str, str] | None = None,
                 on_result: Any = None) -> Any:
        from ufcctl.engine.gate import GATE_ENV
        from ufcctl.engine.run_result import HostResult, RunResult

        self.processes += 1
        self.first_launch = self.first_launch or time.monotonic()
        names = [h.name for h in hosts]
        spec = self.work / f"{run_id}.json"
        spec.write_text(json.dumps({"hosts": names, "forks": options.forks, "gate": (env or {})[GATE_ENV],
                                    "seconds": {h: self.real_seconds[h] for h in names},
                                    "failing": sorted(self.failing & set(names))}))
        proc = subprocess.Popen([sys.executable, __file__, "--simulate", str(spec)], stdout=subprocess.PIPE,
                                text=True, bufsize=1)
        results: dict[str, HostResult] = {}
        stop = threading.Event()

        def watch_cancel() -> None:
            while not stop.wait(0.2):
                if cancel and cancel():
                    proc.kill()
                    return

        watcher = threading.Thread(target=watch_cancel, daemon=True)
        watcher.start()
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            host = event["host"]
            result = results[host] = HostResult(host, ok=1)
            if event["status"] == "failed":
                result.failed, result.failed_task, result.message = 1, event["task"], event["message"]
            else:
                result.changed = 1
            observer.host_task_done(run_id, host, event["task"], event["status"], event.get("message"))
        rc = proc.wait()
        stop.set()
        return RunResult(run_id, playbook.name, "successful" if rc == 0 else "failed", rc, results,
                         self.work, 0.0, not_run=[n for n in names if n not in results])


# -- the fleet ------------------------------------------------------------------------------------


def fleet(names: list[str], capacity: int, seed: int = 14) -> tuple[dict[str, float], set[str]]:
    """Simulated seconds per node (one 10x node per batch of C), and the one node that hangs."""
    rng = random.Random(seed)
    seconds = {h: MEDIAN * math.exp(rng.gauss(0.0, SIGMA)) for h in names}
    for first in range(0, len(names), capacity):
        batch = names[first:first + capacity]
        slow = rng.choice(batch)
        seconds[slow] *= SLOW
    hung = names[rng.randrange(len(names) // 2, len(names))]
    seconds[hung] = HANG_TIMEOUT
    return seconds, {hung}


def list_schedule(order: list[str], seconds: Mapping[str, float], capacity: int) -> float:
    """Makespan when nodes start in `order` on `capacity` slots with zero overhead."""
    slots = [0.0] * capacity
    for host in order:
        start = heapq.heappop(slots)
        heapq.heappush(slots, start + seconds[host])
    return max(slots)


class Watch:
    """A RolloutObserver wrapper: the first admission's time, then the real progress output."""

    def __init__(self, inner: Any, t0: float):
        self.inner = inner
        self.t0 = t0
        self.first: float | None = None

    def rollout_started(self, *args: Any) -> None:
        self.inner.rollout_started(*args)

    def node_started(self, host: str, batch: int) -> None:
        if self.first is None:
            self.first = time.monotonic() - self.t0
        self.inner.node_started(host, batch)

    def node_finished(self, *args: Any) -> None:
        self.inner.node_finished(*args)

    def stopped(self, reason: str) -> None:
        self.inner.stopped(reason)


def filesystem(path: Path) -> str:
    """The type of the filesystem holding `path` (from /proc/mounts), e.g. ext4 or tmpfs."""
    best, kind = "", "unknown"
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return kind
    for line in mounts:
        fields = line.split()
        if len(fields) > 2 and str(path.resolve()).startswith(fields[1]) and len(fields[1]) > len(best):
            best, kind = fields[1], fields[2]
    return kind


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rollout(order: str, inventory_dir: Path, store: Any, kind: Any, executor: SimulatedExecutor,
            capacity: int, compression: float) -> dict[str, Any]:
    from rich.console import Console

    from ufcctl.app.inventory import load_inventory
    from ufcctl.report.rollout import RolloutProgress
    from ufcctl.rollout import runs
    from ufcctl.rollout.kind import RolloutRequest

    devnull = open(os.devnull, "w")  # noqa: SIM115 - the progress lines are produced, not shown
    t0, c0, w0 = time.monotonic(), cpu(), store.writes
    executor.first_launch = None
    loaded: dict[str, float] = {}

    def loader(path: Path) -> Any:
        start = cpu()
        inventory = load_inventory(path)
        loaded["cpu"] = cpu() - start
        return inventory

    # 10 % of at least one batch: the one hung node stays within budget wherever it starts; in the
    # longest-first round it starts first (its previous deadline is its expected time), when only a
    # few nodes have been processed
    request = RolloutRequest(inventory_dir=inventory_dir, batch=capacity, window=1, max_fail=10.0,
                             order=order)
    with RolloutProgress(Console(file=devnull)) as progress:
        watch = Watch(progress, t0)
        summary = runs.start(kind, request, store, loader(inventory_dir), run_fn=executor, observer=watch)
    wall, used = time.monotonic() - t0, cpu() - c0
    devnull.close()
    nodes = store.nodes(summary.run_id)
    started = [n.started for n in nodes if n.started is not None]
    finished = [n.finished for n in nodes if n.finished is not None]
    return {
        "order": order, "status": summary.status, "counts": summary.counts, "wall": wall,
        "cpu": used, "inventory_cpu": loaded.get("cpu", 0.0), "writes": store.writes - w0,
        "first": watch.first, "launch": (executor.first_launch or t0) - t0,
        "makespan": (max(finished) - min(started)) * compression,
    }


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--simulate":
        simulate(sys.argv[2])
        return
    record = take_record("bench_rollout_engine")
    nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 16000
    capacity = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    compression = float(sys.argv[3]) if len(sys.argv) > 3 else 1000.0

    from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
    from ufcctl.rollout.kind import RolloutKind
    from ufcctl.rollout.store import StateStore

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["UFC_STATE_DIR"] = str(work / "state")
        os.environ["KUBECONFIG"] = str(work / "no-kubeconfig")  # no drains: the step is reported skipped
        shape = ClusterShape(npu_nodes=nodes)
        inventory_dir = write_cluster_inventory(work / "inv", shape, "ranges")
        names = [shape.node(i) for i in range(1, nodes + 1)]
        seconds, failing = fleet(names, capacity)
        real = {h: s / compression for h, s in seconds.items()}
        executor = SimulatedExecutor(real, failing, work)
        kind = RolloutKind("sim-upgrade", "upgrade-drivers.yml", MARKER, "npu_node",
                           node_deadline=lambda _o: 2 * HANG_TIMEOUT / compression)
        results = []
        with StateStore(work / "state" / "state.db") as store:
            for order in ("plan", "longest"):
                results.append(rollout(order, inventory_dir, store, kind, executor, capacity, compression))
            known, _ = store.node_durations(kind.name)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    from ufcctl.domain.rollout.order import start_order
    from ufcctl.domain.rollout.plan import NodeRef, plan_batches

    plan = plan_batches([NodeRef(h) for h in names], batch_size=capacity)
    bound = max(max(seconds.values()), sum(seconds.values()) / capacity)
    fifo_ideal = list_schedule(names, seconds, capacity)
    lef_ideal = list_schedule(start_order(plan, names, known), seconds, capacity)

    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}; state store on {filesystem(Path(tempfile.gettempdir()))} "
          "(synchronous=FULL: every commit is an fsync)")
    print(f"fleet: {nodes} nodes, C={capacity} (batch {capacity}, window 1), durations lognormal median "
          f"{MEDIAN:g}s sigma {SIGMA}, one {SLOW:g}x node per batch, one hung node failing at "
          f"{HANG_TIMEOUT:g}s; time compressed {compression:g}x; simulated executor "
          f"({executor.processes} chunk processes in all)")
    print(f"{'rollout':10} {'status':8} {'done':>6} {'failed':>6} {'wall s':>7} {'CPU ms/node':>12} "
          f"{'(inventory)':>11} {'writes/s':>9} {'launch s':>8} {'first go s':>10} {'makespan s':>11} "
          f"{'/ bound':>8}")
    for r in results:
        per_node = 1000 * r["cpu"] / nodes
        inventory_ms = 1000 * r["inventory_cpu"] / nodes
        name = "fifo" if r["order"] == "plan" else "longest"
        print(f"{name:10} {r['status']:8} {r['counts']['done']:>6} "
              f"{r['counts']['failed']:>6} {r['wall']:>7.1f} {per_node:>12.2f} {inventory_ms:>11.2f} "
              f"{r['writes'] / r['wall']:>9.0f} {r['launch']:>8.2f} {r['first']:>10.2f} "
              f"{r['makespan']:>11.0f} {r['makespan'] / bound:>8.3f}")
        record.figure(f"{name} engine CPU per node", per_node, "ms")
        record.figure(f"{name} first node admitted", r["first"], "s")
        record.ratio(f"{name} makespan / bound", r["makespan"] / bound)
    print(f"peak memory (max RSS of the command's process): {peak_mb:.0f} MB")
    print(f"lower bound max(max Ti, sum Ti / C) = {bound:.0f}s")
    print(f"zero-overhead schedules: fifo {fifo_ideal:.0f}s ({fifo_ideal / bound:.3f}x bound), "
          f"longest first {lef_ideal:.0f}s ({lef_ideal / bound:.3f}x bound)")
    print("launch: command start to the first chunk process started (inventory, plan, store, order); "
          "first go: to the first node admitted (also the simulator's start-up)")
    print("aims: engine CPU < 5 ms per node; first node admitted < 10 s at 16,000 nodes")
    record.figure("peak memory", peak_mb, "MB")
    record.write()


if __name__ == "__main__":
    main()
