"""Wall time, controller CPU and tasks per host of `ufcctl deploy` versus plain ansible-playbook.

On a test-owned lab (3 control planes + WORKERS workers, its own name, subnet, state and inventory),
measured in the same run:

  ufcctl    `ufcctl deploy --inventory <lab>`: the project's ansible.cfg (forks, pipelining,
            ControlPersist, poll interval, callbacks), the first run and then a no-op rerun
  baseline  `ansible-playbook -i <lab> playbooks/deploy.yml` with ansible-core's defaults: ANSIBLE_CONFIG
            is an empty file, so forks 5, no pipelining, ssh_args `-C -o ControlMaster=auto
            -o ControlPersist=60s`, internal_poll_interval 0.001, the default callback showing skipped
            hosts. It gets only what it needs to run at all: ANSIBLE_ROLES_PATH=roles, and the lab
            inventory's own connection variables (user, key, known_hosts with StrictHostKeyChecking=yes).
            It runs on a second, fresh lab of the same shape (`lab down`, then `lab up` with new state
            and inventory directories), first run and no-op rerun.

Each run is timed for wall clock and for controller CPU (user + sys of the process and every
descendant it waited for, from getrusage(RUSAGE_CHILDREN); SSH ControlPersist masters detach and
are not counted, on either side). Host-tasks per host come from ufcctl's summary.json and from the
baseline's PLAY RECAP (ok + skipped + failed; ok includes changed). The no-op rerun must change
nothing on either side, else this exits non-zero. Nothing here judges a time: it prints them.

    python tests/benchmarks/bench_deploy.py [WORKERS=6] [--tags TAGS]

Needs podman and the lab image (`ufcctl lab image`). Lab "bdep" on 10.89.79.0/24, removed at the
end; BENCH_LAB / BENCH_SUBNET choose another (e.g. beside a running test suite, whose CI smoke run
uses the defaults).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAB = os.environ.get("BENCH_LAB", "bdep")
SUBNET = os.environ.get("BENCH_SUBNET", "10.89.79.0/24")
BIN = Path(sys.executable).parent
UFCCTL = str(BIN / "ufcctl")
RECAP = re.compile(
    r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.MULTILINE)


@dataclass
class Run:
    """One timed deploy: wall seconds, controller CPU seconds, per-host (ok, changed, skipped, failed)."""

    wall: float
    cpu: float
    hosts: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    load: float = 0.0

    @property
    def changed(self) -> int:
        return sum(h[1] for h in self.hosts.values())

    @property
    def host_tasks(self) -> int:
        return sum(h[0] + h[2] + h[3] for h in self.hosts.values())

    def tasks_of(self, host: str) -> int:
        ok, _, skipped, failed = self.hosts.get(host, (0, 0, 0, 0))
        return ok + skipped + failed


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Run `cmd`; (wall, user+sys CPU of it and its waited-for descendants, the process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=7200, check=False)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc


def _check(what: str, proc: subprocess.CompletedProcess[str]) -> None:
    if proc.returncode != 0:
        fatal = [line for line in proc.stdout.splitlines() if line.startswith(("fatal:", "failed:"))]
        sys.exit(f"{what} failed (rc {proc.returncode}):\n" + "\n".join(fatal)[-6000:]
                 + f"\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def _lab_env(work: Path) -> dict[str, str]:
    return {**os.environ, "UFC_STATE_DIR": str(work / "state"), "UFC_LAB_NAME": LAB,
            "UFC_LAB_INVENTORY": str(work / "inventory"), "KUBECONFIG": str(work / "none"),
            "CONTAINERS_CONF": str(ROOT / "ufcctl" / "lab" / "containers.conf"),
            # this checkout's ufcctl for the CLI and for the roles' filter plugins, on both sides
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def _ufcctl_deploy(work: Path, env: dict[str, str], tags: str | None) -> Run:
    cmd = [UFCCTL, "deploy", "--inventory", str(work / "inventory"), "--output", "json"]
    if tags:
        cmd += ["--tags", tags]
    wall, cpu, proc = _timed(cmd, env)
    _check("ufcctl deploy", proc)
    summary = json.loads((Path(json.loads(proc.stdout)["run_dir"]) / "summary.json").read_text())
    hosts = {name: (h["ok"], h["changed"], h["skipped"], h["failed"]) for name, h in summary["hosts"].items()}
    return Run(wall, cpu, hosts, os.getloadavg()[0])


def _baseline_deploy(work: Path, env: dict[str, str], tags: str | None) -> Run:
    cmd = [str(BIN / "ansible-playbook"), "-i", str(work / "inventory"),
           str(ROOT / "playbooks" / "deploy.yml")]
    if tags:
        cmd += ["--tags", tags]
    wall, cpu, proc = _timed(cmd, env)
    _check("baseline ansible-playbook", proc)
    hosts = {m[0]: (int(m[1]), int(m[2]), int(m[5]), int(m[4])) for m in RECAP.findall(proc.stdout)}
    return Run(wall, cpu, hosts, os.getloadavg()[0])


def _on_a_fresh_lab(work: Path, workers: int, deploy) -> tuple[Run, Run]:
    """lab up, first deploy, no-op deploy, lab down (always)."""
    env = _lab_env(work)
    _, _, up = _timed([UFCCTL, "lab", "up", "--nodes", str(workers), "--subnet", SUBNET], env)
    try:
        _check("lab up", up)
        first = deploy(work, env)
        noop = deploy(work, env)
    finally:
        _timed([UFCCTL, "lab", "down"], env)
    if noop.changed:
        sys.exit(f"the no-op rerun changed {noop.changed} host-task(s): not idempotent ({work})")
    return first, noop


def _machine() -> str:
    mem = subprocess.run(["free", "-m"], capture_output=True, text=True, check=False).stdout.splitlines()[1:2]
    total = mem[0].split()[1] + " MiB" if mem else "?"
    return f"{platform.platform()}, {os.cpu_count()} CPUs, {total} RAM, python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workers", nargs="?", type=int, default=6, help="worker nodes (default 6)")
    parser.add_argument("--tags", help="deploy only these tags (the CI smoke run: preflight,node_tuning)")
    args = parser.parse_args()
    lab_nodes = 3 + args.workers
    cp1, w01 = f"{LAB}-cp1", f"{LAB}-w01"
    print(f"machine: {_machine()}; load average at start {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        ufc_work, base_work = Path(tmp) / "ufcctl", Path(tmp) / "baseline"
        ufc_first, ufc_noop = _on_a_fresh_lab(
            ufc_work, args.workers, lambda work, env: _ufcctl_deploy(work, env, args.tags))
        empty = Path(tmp) / "empty.cfg"
        empty.write_text("[defaults]\n")

        def baseline(work: Path, env: dict[str, str]) -> Run:
            # ansible-core's defaults (no project ansible.cfg); the roles path is all it needs besides the
            # inventory's connection variables. Its own state directory: a fresh controller too.
            base_env = {**env, "ANSIBLE_CONFIG": str(empty), "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
                        "ANSIBLE_NOCOLOR": "1"}
            return _baseline_deploy(work, base_env, args.tags)

        base_first, base_noop = _on_a_fresh_lab(base_work, args.workers, baseline)
    print(f"lab: 3 control planes + {args.workers} workers ({lab_nodes} nodes) on {SUBNET}, "
          f"tags: {args.tags or 'all'}; load average at end {os.getloadavg()[0]:.1f}")
    rows = [("ufcctl deploy", ufc_first, ufc_noop), ("ansible-playbook, defaults", base_first, base_noop)]
    print(f"{'':28} {'first s':>8} {'CPU s':>7} {'no-op s':>8} {'CPU s':>7} {'host-tasks':>10} "
          f"{'cp1':>5} {'w01':>5}  load (first/no-op)")
    for name, first, noop in rows:
        print(f"{name:28} {first.wall:8.1f} {first.cpu:7.1f} {noop.wall:8.1f} {noop.cpu:7.1f} "
              f"{noop.host_tasks:10d} {noop.tasks_of(cp1):5d} {noop.tasks_of(w01):5d}  "
              f"{first.load:.1f}/{noop.load:.1f}")
    print("host-tasks: of the no-op run (ok + skipped + failed over all hosts), cp1/w01: per host")
    print(f"baseline / ufcctl: first deploy wall = {base_first.wall / ufc_first.wall:.2f}x, "
          f"CPU = {base_first.cpu / ufc_first.cpu:.2f}x; no-op wall = {base_noop.wall / ufc_noop.wall:.2f}x, "
          f"CPU = {base_noop.cpu / ufc_noop.cpu:.2f}x")
    print(f"ufcctl no-op CPU per host-task = {ufc_noop.cpu / max(ufc_noop.host_tasks, 1):.3f} s, "
          f"baseline = {base_noop.cpu / max(base_noop.host_tasks, 1):.3f} s")


if __name__ == "__main__":
    main()
