"""Wall time of `ufcctl upgrade-drivers` versus the ideal and versus plain ansible-playbook `serial:`.

On a test-owned lab (its own name and subnet) with the lab NPU emulator: every node's emulated
driver install takes T seconds and one node, in the middle of the fleet, takes 10 x T. Measured in
the same run, on the same nodes, doing the same work (a firmware + driver upgrade on every node):

  ufcctl    `ufcctl upgrade-drivers --batch C` (the fleet engine: window of C nodes, host_pinned, gate)
  baseline  `ansible-playbook tests/benchmarks/baseline_upgrade_drivers.yml -e baseline_serial=C`
            (serial batches, linear strategy, default SSH settings: no pipelining, ControlPersist 60s)

and printed against two ideals with concurrency C:
  ideal (issue)  T x ceil(nodes / C), ignoring the slow node and all overhead
  lower bound    max(10 T, (nodes - 1 + 10) T / C): no schedule with C slots can beat it

    python tests/benchmarks/bench_upgrade_drivers.py [NODES=12] [T=10] [C=4] [ROUNDS=1]

Needs podman and the lab image (`ufcctl lab image`). Creates lab "bdrv" on 10.89.78.0/24 and
removes it at the end; BENCH_LAB / BENCH_SUBNET choose another (e.g. beside a running test suite,
whose CI smoke run uses the defaults).
"""

from __future__ import annotations

import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lab.npu_emulator.lab import installs, write_faults  # noqa: E402
from lab.npu_emulator.packages import RELEASES  # noqa: E402

LAB = os.environ.get("BENCH_LAB", "bdrv")
SUBNET = os.environ.get("BENCH_SUBNET", "10.89.78.0/24")
UFCCTL = str(Path(sys.executable).parent / "ufcctl")
PLAYBOOK = str(ROOT / "playbooks" / "upgrade-drivers.yml")


def _run(cmd: list[str], env: dict[str, str],
         timeout: int = 7200) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          check=False)
    return time.monotonic() - t0, proc


def _check(what: str, proc: subprocess.CompletedProcess) -> None:
    if proc.returncode != 0:
        # the failing tasks first: a long run's tail is only the recap
        fatal = [line for line in proc.stdout.splitlines() if line.startswith(("fatal:", "failed:"))]
        sys.exit(f"{what} failed (rc {proc.returncode}):\n" + "\n".join(fatal)[-6000:]
                 + f"\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def main() -> None:
    nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    t = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    c = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    workers = [f"{LAB}-w{i:02d}" for i in range(1, nodes + 1)]
    slow = workers[nodes // 2]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inventory = work / "inventory"
        (work / "empty.cfg").write_text("[defaults]\n")
        env = {**os.environ, "UFC_STATE_DIR": str(work / "state"), "UFC_LAB_NAME": LAB,
               "UFC_LAB_INVENTORY": str(inventory), "KUBECONFIG": str(work / "none"),
               "CONTAINERS_CONF": str(ROOT / "ufcctl" / "lab" / "containers.conf"),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        # the baseline: ansible-core's own defaults, not the project's ansible.cfg (pipelining, ...)
        baseline_env = {**env, "ANSIBLE_CONFIG": str(work / "empty.cfg"),
                        "ANSIBLE_ROLES_PATH": str(ROOT / "roles")}
        # `lab up` also starts the NPU emulator's mirror and writes the inventory's npu_node vars
        _, up = _run([UFCCTL, "lab", "up", "--nodes", str(nodes), "--subnet", SUBNET], env)
        _check("lab up", up)
        try:
            v1, v2 = RELEASES
            # the first install only brings every node to release 1: wider, so big fleets start sooner
            _, first = _run([UFCCTL, "upgrade-drivers", "-i", str(inventory), "--batch",
                             str(min(nodes, 4 * c))], env)
            _check("first install (not measured)", first)
            for worker in workers:
                write_faults(worker, {"driver_seconds": t * (10 if worker == slow else 1)})
            # both get the same installer timeout, above the slow node's 10 T (ufcctl passes its
            # --node-timeout to the role; the lab's own group_vars say 300 s, which killed a 400 s install)
            timeout = max(600, int(20 * t))
            results: dict[str, list[float]] = {"ufcctl": [], "baseline": []}
            target = v1
            for _ in range(rounds):
                target = v2 if target is v1 else v1
                args = ["--version", target.driver_version, "--firmware-version", target.firmware_version]
                seconds, proc = _run([UFCCTL, "upgrade-drivers", "-i", str(inventory), "--batch", str(c),
                                      "--node-timeout", str(timeout), *args], env)
                _check("ufcctl upgrade-drivers", proc)
                results["ufcctl"].append(seconds)
                target = v2 if target is v1 else v1
                seconds, proc = _run([str(Path(sys.executable).parent / "ansible-playbook"), "-i",
                                      str(inventory), str(ROOT / "tests" / "benchmarks" /
                                                          "baseline_upgrade_drivers.yml"),
                                      "-e", f"baseline_serial={c}",
                                      "-e", f"ascend_driver_install_timeout={timeout}", "-e",
                                      f"ufc_npu_driver_version={target.driver_version}", "-e",
                                      f"ufc_npu_firmware_version={target.firmware_version}"], baseline_env)
                _check("baseline ansible-playbook", proc)
                results["baseline"].append(seconds)
            upgrades = sum(1 for w in workers for kind, _, mode in installs(w) if mode == "upgrade")
            expected = 2 * nodes * 2 * rounds  # firmware + driver, ufcctl + baseline, per round
            assert upgrades == expected, f"expected {expected} upgrades, got {upgrades}"
        finally:
            _run([UFCCTL, "lab", "down"], env)  # the mirror too
    ideal = t * math.ceil(nodes / c)
    bound = max(10 * t, (nodes - 1 + 10) * t / c)
    ufc = min(results["ufcctl"])
    base = min(results["baseline"])
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}, "
          f"load average at end {os.getloadavg()[0]:.1f}")
    print(f"fleet: {nodes} nodes, emulated install T={t:g}s, {slow} takes {10 * t:g}s, concurrency C={c}, "
          f"rounds={rounds} (best of)")
    print(f"ufcctl upgrade-drivers: {ufc:.1f}s   all: {', '.join(f'{s:.1f}' for s in results['ufcctl'])}")
    print(f"baseline serial+linear: {base:.1f}s   all: {', '.join(f'{s:.1f}' for s in results['baseline'])}")
    print(f"ideal T*ceil(n/C) = {ideal:.1f}s  -> ufcctl / ideal = {ufc / ideal:.2f}x (aim <= 1.3)")
    print(f"lower bound max(10T, sum/C) = {bound:.1f}s  -> ufcctl / bound = {ufc / bound:.2f}x")
    print(f"baseline / ufcctl = {base / ufc:.2f}x (aim >= 2)")


if __name__ == "__main__":
    main()
