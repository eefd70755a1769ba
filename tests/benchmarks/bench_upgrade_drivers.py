"""The fair rollout benchmark and the controller CPU per node of `ufcctl upgrade-drivers`, on the lab.

On a test-owned lab (its own name and subnet) with the lab NPU emulator (not Huawei software: an
installer that sleeps as long as the node's fault file says). Per-node install times Ti are drawn
from a lognormal distribution (median T, sigma 0.5: most nodes near T, a tail of slower ones), then
in every batch of C consecutive nodes one node, at a random position, takes 10 x its time, and one
other node's install hangs until the installer timeout kills it (that node fails; the budget allows
it). The seed fixes the draw, so runs repeat.

Measured in the same run, each from the same state (every node one release behind; the emulator's
version files are reset between runs, no install is skipped), each upgrading firmware and driver:

  round 1   `ufcctl upgrade-drivers --batch C` with an empty state store: no recorded durations,
            so nodes start in plan (inventory) order
  round 2   the same command again: the engine starts the nodes longest expected first, from the
            durations round 1 recorded (the hung node: the time it was given before it failed)
  baseline  `ansible-playbook tests/benchmarks/baseline_upgrade_drivers.yml -e baseline_serial=C`:
            the same role, serial batches, linear strategy, ansible-core's default settings (an empty
            ansible.cfg: no pipelining, ControlPersist 60s, forks 5)
  no-op     `ufcctl upgrade-drivers` once more with every node already at the target

Reported: each run's wall time against the lower bound LB = max(max Ti, sum Ti / C) (no schedule
with C slots can beat it; the hung node's Ti is the installer timeout), baseline / ufcctl, and the
controller CPU per node (tests/benchmarks/benchlib.py: the command and all its descendants,
detached SSH masters included). Nothing here judges a time; it exits non-zero if a run did not do
its work (wrong nodes failed, the install counters do not add up, the no-op changed something).

    python tests/benchmarks/bench_upgrade_drivers.py [NODES=32] [T=4] [C=4] [--seed 1]
        [--accelerate mitogen] [--no-baseline]

Needs podman and the lab image (`ufcctl lab image`). Creates lab "bdrv" on 10.89.78.0/24 and
removes it at the end; BENCH_LAB / BENCH_SUBNET choose another (e.g. beside a running test suite,
whose CI smoke run uses the defaults).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import Measured, Record, check, machine, measured, take_record  # noqa: E402

from tests.lab_standins.npu_emulator.lab import installs, set_installed, write_faults  # noqa: E402
from tests.lab_standins.npu_emulator.packages import RELEASES  # noqa: E402

LAB = os.environ.get("BENCH_LAB", "bdrv")
SUBNET = os.environ.get("BENCH_SUBNET", "10.89.78.0/24")
BIN = Path(sys.executable).parent
UFCCTL = str(BIN / "ufcctl")
SIGMA = 0.5  # lognormal spread: the 95th percentile node takes ~2.3 x the median
SLOW = 10  # one node per batch takes this many times its own draw


@dataclass(frozen=True)
class Fleet:
    workers: list[str]
    seconds: dict[str, float]  # emulated install time of every node but the hung one
    slow: list[str]
    hung: str
    timeout: int  # the installer timeout, which ends the hung node

    def lower_bound(self, c: int) -> float:
        times = [*self.seconds.values(), float(self.timeout)]
        return max(max(times), sum(times) / c)


def draw(workers: list[str], t: float, c: int, seed: int) -> Fleet:
    rng = random.Random(seed)
    seconds = {w: t * rng.lognormvariate(0.0, SIGMA) for w in workers}
    slow = []
    for start in range(0, len(workers), c):
        node = rng.choice(workers[start:start + c])
        seconds[node] *= SLOW
        slow.append(node)
    hung = rng.choice([w for w in workers if w not in slow])
    del seconds[hung]
    # long enough that no healthy node is ever killed, even on a loaded machine
    timeout = math.ceil(1.5 * max(seconds.values())) + 10
    return Fleet(workers, {w: round(s, 1) for w, s in seconds.items()}, slow, hung, timeout)


@dataclass
class Result:
    name: str
    run: Measured
    nodes: int
    changed: int | None = None

    @property
    def label(self) -> str:  # "ufcctl round 1", "baseline", ...: the name before its description
        return self.name.split(":")[0]

    def row(self, bound: float) -> str:
        return (f"{self.name:<44} {self.run.wall:8.1f} {self.run.wall / bound:6.2f} {self.run.cpu:8.1f} "
                f"{self.run.cpu / self.nodes:8.2f}")


def _run(cmd: list[str], env: dict[str, str], what: str) -> None:
    """A step that is not measured (lab up/down, the first install): a plain child process."""
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=7200, check=False)
    check(what, proc)


def _ufcctl(env: dict[str, str], inventory: Path, target, c: int, fleet: Fleet, extra: list[str],
            name: str, failing: list[str]) -> Result:
    cmd = [UFCCTL, "upgrade-drivers", "-i", str(inventory), "--batch", str(c), "--output", "json",
           "--node-timeout", str(fleet.timeout), "--max-fail", "50", "--version", target.driver_version,
           "--firmware-version", target.firmware_version, *extra]
    run = measured(cmd, env, ROOT)
    check(name, run.proc, ok=(0, 1))  # 1: the hung node failed, as it must
    data = json.loads(run.proc.stdout)
    failed = sorted(n["host"] for n in data["nodes"] if n["state"] != "done")
    if failed != failing:
        sys.exit(f"{name}: nodes not done {failed}, expected {failing}:\n{run.proc.stdout[-3000:]}")
    return Result(name, run, len(fleet.workers), sum(1 for n in data["nodes"] if n["changed"]))


def _baseline(env: dict[str, str], inventory: Path, target, c: int, fleet: Fleet) -> Result:
    cmd = [str(BIN / "ansible-playbook"), "-i", str(inventory),
           str(ROOT / "tests" / "benchmarks" / "baseline_upgrade_drivers.yml"), "-e", f"baseline_serial={c}",
           "-e", f"ascend_driver_install_timeout={fleet.timeout}",
           "-e", f"ufc_npu_driver_version={target.driver_version}",
           "-e", f"ufc_npu_firmware_version={target.firmware_version}"]
    run = measured(cmd, env, ROOT)
    check("baseline ansible-playbook", run.proc, ok=(0, 2))  # 2: a host failed (the hung one)
    recap = re.findall(r"^(\S+)\s+:\s+ok=\d+\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)",
                       run.proc.stdout, re.MULTILINE)
    failed = sorted(h for h, unreachable, fail in recap if int(unreachable) or int(fail))
    if len(recap) != len(fleet.workers) or failed != [fleet.hung]:
        sys.exit(f"baseline: failed {failed}, expected [{fleet.hung}]:\n{run.proc.stdout[-3000:]}")
    return Result("baseline: serial C, linear, ansible defaults", run, len(fleet.workers))


def main() -> None:
    record = take_record("bench_upgrade_drivers")
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("nodes", type=int, nargs="?", default=32)
    parser.add_argument("t", type=float, nargs="?", default=4.0, help="median emulated install seconds")
    parser.add_argument("c", type=int, nargs="?", default=4, help="concurrency (--batch, serial)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--accelerate", choices=["mitogen"], default=None)
    parser.add_argument("--no-baseline", action="store_true", help="skip the slow baseline run")
    args = parser.parse_args()
    workers = [f"{LAB}-w{i:02d}" for i in range(1, args.nodes + 1)]
    fleet = draw(workers, args.t, args.c, args.seed)
    old, new = RELEASES
    extra = ["--accelerate", args.accelerate] if args.accelerate else []
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inventory = work / "inventory"
        (work / "empty.cfg").write_text("[defaults]\n")
        env = {**os.environ, "UFC_STATE_DIR": str(work / "state"), "UFC_LAB_NAME": LAB,
               "UFC_LAB_INVENTORY": str(inventory), "KUBECONFIG": str(work / "none"),
               "UFC_LAB_MONITORING": "0",  # `lab up --no-monitoring`: not part of a driver rollout
               "CONTAINERS_CONF": str(ROOT / "ufcctl" / "lab" / "containers.conf"),
               "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
               "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        baseline_env = {**env, "ANSIBLE_CONFIG": str(work / "empty.cfg"),
                        "ANSIBLE_ROLES_PATH": str(ROOT / "roles")}
        # `lab up` also starts the NPU emulator's mirror and writes the inventory's npu_node vars
        _run([UFCCTL, "lab", "up", "--nodes", str(args.nodes), "--subnet", SUBNET], env, "lab up")
        try:
            # the first install (not measured) keeps its durations in a store of its own: round 1
            # must start with nothing recorded
            _run([UFCCTL, "upgrade-drivers", "-i", str(inventory), "--batch",
                  str(min(args.nodes, 4 * args.c))],
                 {**env, "UFC_STATE_DIR": str(work / "first")}, "first install (not measured)")
            for worker in workers:
                write_faults(worker, {"hang": "firmware"} if worker == fleet.hung
                             else {"driver_seconds": fleet.seconds[worker]})
            before = sum(len(installs(w)) for w in workers)

            def reset() -> None:
                for worker in workers:
                    set_installed(worker, old)

            for name in ("ufcctl round 1: plan order, nothing recorded",
                         "ufcctl round 2: longest recorded first"):
                reset()
                results.append(_ufcctl(env, inventory, new, args.c, fleet, extra, name, [fleet.hung]))
            if not args.no_baseline:
                reset()
                results.append(_baseline(baseline_env, inventory, new, args.c, fleet))
            set_installed(fleet.hung, new)  # every node at the target: nothing to do anywhere
            noop = _ufcctl(env, inventory, new, args.c, fleet, extra,
                           "ufcctl no-op: every node at target", [])
            if noop.changed:
                sys.exit(f"the no-op run changed {noop.changed} nodes:\n{noop.run.proc.stdout[-3000:]}")
            results.append(noop)
            upgraded = sum(len(installs(w)) for w in workers) - before
            runs = 2 + (0 if args.no_baseline else 1)
            expected = runs * (args.nodes - 1) * 2  # firmware + driver on every node but the hung one
            if upgraded != expected:
                sys.exit(f"expected {expected} completed installs, the emulator counted {upgraded}")
        finally:
            _run([UFCCTL, "lab", "down"], env, "lab down")  # the mirror too
    report(args, fleet, results, results[0].run.how, record)
    record.write()


def report(args: argparse.Namespace, fleet: Fleet, results: list[Result], how: str,
           record: Record) -> None:
    bound = fleet.lower_bound(args.c)
    times = sorted(fleet.seconds.values())
    print(machine())
    print(f"fleet: {args.nodes} nodes, concurrency C={args.c}, seed {args.seed}, accelerate "
          f"{args.accelerate or 'none'}; emulated installs: lognormal median {args.t:g}s sigma {SIGMA}, "
          f"min {times[0]:.1f}s, max {times[-1]:.1f}s, sum {sum(times):.0f}s; one {SLOW}x node per batch "
          f"({', '.join(fleet.slow)}); {fleet.hung} hangs until the installer timeout {fleet.timeout}s")
    print(f"lower bound LB = max(max Ti, sum Ti / C) = {bound:.1f}s")
    counted = ("the command and every descendant, SSH masters included" if how == "cgroup"
               else "the command and its waited-for descendants, SSH masters not counted")
    print(f"controller CPU from {how}: {counted}")
    print(f"{'run':<44} {'wall s':>8} {'/ LB':>6} {'CPU s':>8} {'CPU/node':>8}")
    record.figure("lower bound LB", bound, "s")
    for result in results:
        print(result.row(bound))
        record.figure(f"{result.label} wall", result.run.wall, "s")
        record.figure(f"{result.label} CPU per node", result.run.cpu / result.nodes, "CPU-s")
        record.ratio(f"{result.label} / LB", result.run.wall / bound)
    by = {r.label: r for r in results}
    ufc = [r for r in results if r.label.startswith("ufcctl round")]
    if "baseline" in by:
        ratios = ", ".join(f"{r.label} {by['baseline'].run.wall / r.run.wall:.2f}x" for r in ufc)
        print(f"baseline / ufcctl: {ratios} (aim >= 2)")
        for r in ufc:
            record.ratio(f"baseline / {r.label}", by["baseline"].run.wall / r.run.wall)
    print(f"ufcctl / LB: {', '.join(f'{r.label} {r.run.wall / bound:.2f}x' for r in ufc)} (aim <= 1.3)")
    upgrade = max(r.run.cpu for r in ufc) / args.nodes
    print(f"controller CPU per node: upgrading {upgrade:.2f} CPU-s (aim <= 1.5), no-op "
          f"{by['ufcctl no-op'].run.cpu / args.nodes:.2f} CPU-s (aim <= 0.5)")


if __name__ == "__main__":
    main()
