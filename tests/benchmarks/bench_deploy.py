"""Wall time, controller CPU and tasks per host of `ufcctl deploy` versus plain ansible-playbook, per phase.

On a test-owned lab (3 control planes + WORKERS workers, its own name, subnet, state and inventory),
measured in the same run, each phase a process of its own so that it is timed alone:

  ufcctl    cluster phase `ufcctl deploy --phase cluster` (playbooks/deploy.yml on the control planes,
            the workers' vars along for the add-ons), then node phase `ufcctl deploy --phase nodes`
            (the fleet engine: join token on cp1, then playbooks/deploy-nodes.yml, one long-lived
            host_pinned process, paced admissions); the project's ansible.cfg. First run, then a
            no-op rerun.
  baseline  today's path without ufcctl: `ansible-playbook -i <lab> playbooks/deploy.yml`, then one
            unbatched `ansible-playbook -i <lab> playbooks/join-token.yml playbooks/deploy-nodes.yml`
            over every worker, with ansible-core's defaults: ANSIBLE_CONFIG is an empty file, so forks
            5, no pipelining, ssh_args `-C -o ControlMaster=auto -o ControlPersist=60s`,
            internal_poll_interval 0.001, linear strategy as written in no play (host_pinned comes from
            the playbook itself, so both sides run the same plays). It gets only what it needs to run
            at all: ANSIBLE_ROLES_PATH=roles, and the lab inventory's own connection variables. It runs
            on a second, fresh lab of the same shape, first run and no-op rerun.

Each run is timed for wall clock and for controller CPU (user + sys of the process and every
descendant it waited for, from getrusage(RUSAGE_CHILDREN); SSH ControlPersist masters detach and
are not counted, on either side). Host-tasks per host come from ufcctl's summary.json files (every
Ansible run of the command) and from the baseline's PLAY RECAP (ok + skipped + failed; ok includes
changed). The no-op rerun must change nothing on either side, else this exits non-zero. Nothing here
judges a time: it prints them.

    python tests/benchmarks/bench_deploy.py [WORKERS=6] [--tags TAGS] [--projection-workers 16000]
        [--one-lab]

--tags limits the cluster phase only (the CI smoke run: preflight,node_tuning); the node phase always
runs whole (without the cluster's control plane its join step reports SKIPPED on both sides alike).
--projection-workers sizes the generated inventory of the closing `ufcctl plan deploy` projection.
--one-lab (the CI smoke run, which checks the code path and not the figures) runs the baseline on the
ufcctl side's lab, after ufcctl's runs, instead of on a second fresh lab: one `lab up` less, but the
baseline's "first" run is then a rerun, so its first-run figures and ratios mean nothing.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAB = os.environ.get("BENCH_LAB", "bdep")
SUBNET = os.environ.get("BENCH_SUBNET", "10.89.79.0/24")
BIN = Path(sys.executable).parent
UFCCTL = str(BIN / "ufcctl")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import take_record  # noqa: E402

RECAP = re.compile(
    r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.MULTILINE)


@dataclass
class Run:
    """One timed deploy: wall seconds, controller CPU seconds, per-host (ok, changed, skipped, failed)."""

    wall: float
    cpu: float
    hosts: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    load: float = 0.0
    node_seconds: list[float] = field(default_factory=list)  # ufcctl node phase: each worker's time

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
            # `lab up --no-monitoring`: the stack measured since 9d87873, without roles/monitoring
            "UFC_LAB_MONITORING": "0",
            # this checkout's ufcctl for the CLI and for the roles' filter plugins, on both sides
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def _run_dirs(work: Path) -> set[Path]:
    runs = work / "state" / "runs"
    return set(runs.iterdir()) if runs.exists() else set()


def _ufcctl_phase(work: Path, env: dict[str, str], phase: str, tags: str | None) -> Run:
    cmd = [UFCCTL, "deploy", "--inventory", str(work / "inventory"), "--phase", phase, "--output", "json"]
    if tags and phase == "cluster":
        cmd += ["--tags", tags]
    before = _run_dirs(work)
    wall, cpu, proc = _timed(cmd, env)
    _check(f"ufcctl deploy --phase {phase}", proc)
    hosts: dict[str, tuple[int, int, int, int]] = {}
    for directory in _run_dirs(work) - before:  # every Ansible run the command made
        summary = directory / "summary.json"
        if summary.is_file():
            for name, h in json.loads(summary.read_text())["hosts"].items():
                old = hosts.get(name, (0, 0, 0, 0))
                hosts[name] = (old[0] + h["ok"], old[1] + h["changed"], old[2] + h["skipped"],
                               old[3] + h["failed"])
    nodes = json.loads(proc.stdout).get("nodes") or {}
    seconds = [n["seconds"] for n in nodes.get("nodes", []) if n.get("seconds") is not None]
    return Run(wall, cpu, hosts, os.getloadavg()[0], seconds)


def _projection(node_seconds: float, nodes: int = 16000) -> str:
    """`ufcctl plan deploy` on a generated inventory of `nodes` workers (16,000 by default) with the lab's
    median worker time."""
    sys.path.insert(0, str(ROOT))
    from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory

    with tempfile.TemporaryDirectory() as tmp:
        inventory = write_cluster_inventory(Path(tmp) / "inv", ClusterShape(npu_nodes=nodes), "ranges")
        env = {**os.environ, "UFC_STATE_DIR": str(Path(tmp) / "state")}
        proc = subprocess.run([UFCCTL, "plan", "deploy", "--inventory", str(inventory), "--node-seconds",
                               f"{node_seconds:.3f}", "--output", "json"], env=env, capture_output=True,
                              text=True, timeout=600, check=False)
    _check(f"ufcctl plan deploy ({nodes:,} workers)", proc)
    plan = json.loads(proc.stdout)
    total = plan["projection"]["canary_seconds"] + plan["projection"]["rollout_seconds"]
    return (f"projection for {plan['targets']} workers (`ufcctl plan deploy`, defaults: batch "
            f"{plan['batch_size']} x window {plan['window']}, join rate {plan['join_rate']:g}/s) at the "
            f"lab's median {node_seconds:.1f} s per worker: {total / 3600:.2f} h; pacing floor "
            f"{plan['pacing_floor_seconds'] / 60:.1f} min")


def _baseline_phase(work: Path, env: dict[str, str], playbooks: list[str], tags: str | None) -> Run:
    cmd = [str(BIN / "ansible-playbook"), "-i", str(work / "inventory"),
           *(str(ROOT / "playbooks" / p) for p in playbooks)]
    if tags:
        cmd += ["--tags", tags]
    wall, cpu, proc = _timed(cmd, env)
    _check(f"baseline ansible-playbook {' '.join(playbooks)}", proc)
    hosts = {m[0]: (int(m[1]), int(m[2]), int(m[5]), int(m[4])) for m in RECAP.findall(proc.stdout)}
    return Run(wall, cpu, hosts, os.getloadavg()[0])


Phases = dict[str, Run]  # "cluster" / "nodes" -> one timed run
Side = tuple[Path, Callable[[Path, dict[str, str], str], Run]]  # a side's work directory and its deploy


def _on_a_fresh_lab(work: Path, workers: int, sides: list[Side]) -> list[tuple[Phases, Phases]]:
    """lab up (its state and inventory under `work`), then for each side in turn a first deploy and a
    no-op deploy (each: cluster phase, then node phase), lab down (always). A side whose work directory
    is not `work` (--one-lab) keeps its own state directory and reaches the lab's inventory through a
    link."""
    env = _lab_env(work)
    _, _, up = _timed([UFCCTL, "lab", "up", "--nodes", str(workers), "--subnet", SUBNET], env)
    runs: list[tuple[Path, Phases, Phases]] = []
    try:
        _check("lab up", up)
        for side_work, deploy in sides:
            if side_work != work:
                side_work.mkdir(parents=True, exist_ok=True)
                (side_work / "inventory").symlink_to(work / "inventory", target_is_directory=True)
            side_env = _lab_env(side_work)
            first = {phase: deploy(side_work, side_env, phase) for phase in ("cluster", "nodes")}
            noop = {phase: deploy(side_work, side_env, phase) for phase in ("cluster", "nodes")}
            runs.append((side_work, first, noop))
    finally:
        _timed([UFCCTL, "lab", "down"], env)
    for side_work, _, noop in runs:
        for phase, run in noop.items():
            if run.changed:
                sys.exit(f"the no-op {phase} phase changed {run.changed} host-task(s): not idempotent "
                         f"({side_work})")
    return [(first, noop) for _, first, noop in runs]


def _machine() -> str:
    mem = subprocess.run(["free", "-m"], capture_output=True, text=True, check=False).stdout.splitlines()[1:2]
    total = mem[0].split()[1] + " MiB" if mem else "?"
    return f"{platform.platform()}, {os.cpu_count()} CPUs, {total} RAM, python {platform.python_version()}"


def main() -> None:
    record = take_record("bench_deploy")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workers", nargs="?", type=int, default=6, help="worker nodes (default 6)")
    parser.add_argument("--tags", help="the cluster phase's tags (the CI smoke run: preflight,node_tuning)")
    parser.add_argument("--projection-workers", type=int, default=16000,
                        help="workers of the generated inventory the closing `ufcctl plan deploy` projection "
                             "runs on (default 16000; the CI smoke run: a few hundred, the same code path)")
    parser.add_argument("--one-lab", action="store_true",
                        help="run the baseline on the ufcctl side's lab after ufcctl's runs, not on a second "
                             "fresh lab: one `lab up` less, for the CI smoke run; the baseline's first run "
                             "is then a rerun, so its first-run figures and ratios mean nothing")
    args = parser.parse_args()
    lab_nodes = 3 + args.workers
    cp1, w01 = f"{LAB}-cp1", f"{LAB}-w01"
    print(f"machine: {_machine()}; load average at start {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        ufc_work, base_work = Path(tmp) / "ufcctl", Path(tmp) / "baseline"

        def ufcctl(work: Path, env: dict[str, str], phase: str) -> Run:
            return _ufcctl_phase(work, env, phase, args.tags)

        empty = Path(tmp) / "empty.cfg"
        empty.write_text("[defaults]\n")

        def baseline(work: Path, env: dict[str, str], phase: str) -> Run:
            # ansible-core's defaults (no project ansible.cfg); the roles path is all it needs besides the
            # inventory's connection variables. Its own state directory: a fresh controller too.
            base_env = {**env, "ANSIBLE_CONFIG": str(empty), "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
                        "ANSIBLE_NOCOLOR": "1"}
            if phase == "cluster":
                return _baseline_phase(work, base_env, ["deploy.yml"], args.tags)
            return _baseline_phase(work, base_env, ["join-token.yml", "deploy-nodes.yml"], None)

        if args.one_lab:
            (ufc_first, ufc_noop), (base_first, base_noop) = _on_a_fresh_lab(
                ufc_work, args.workers, [(ufc_work, ufcctl), (base_work, baseline)])
        else:
            [(ufc_first, ufc_noop)] = _on_a_fresh_lab(ufc_work, args.workers, [(ufc_work, ufcctl)])
            [(base_first, base_noop)] = _on_a_fresh_lab(base_work, args.workers, [(base_work, baseline)])
    print(f"lab: 3 control planes + {args.workers} workers ({lab_nodes} nodes) on {SUBNET}, "
          f"cluster phase tags: {args.tags or 'all'}; load average at end {os.getloadavg()[0]:.1f}")
    if args.one_lab:
        print("one lab (--one-lab): the baseline ran after ufcctl on the same lab; its first run was a "
              "rerun, so its first-run figures and ratios mean nothing")
    print(f"{'':34} {'first s':>8} {'CPU s':>7} {'no-op s':>8} {'CPU s':>7} {'host-tasks':>10} "
          f"{'cp1':>5} {'w01':>5}  load (first/no-op)")
    for phase in ("cluster", "nodes"):
        for name, first, noop in ((f"ufcctl {phase}", ufc_first[phase], ufc_noop[phase]),
                                  (f"ansible-playbook {phase}", base_first[phase], base_noop[phase])):
            for when, run in (("first", first), ("no-op", noop)):
                record.figure(f"{name} {when} wall", run.wall, "s")
                record.figure(f"{name} {when} CPU", run.cpu, "CPU-s")
            print(f"{name:34} {first.wall:8.1f} {first.cpu:7.1f} {noop.wall:8.1f} {noop.cpu:7.1f} "
                  f"{noop.host_tasks:10d} {noop.tasks_of(cp1):5d} {noop.tasks_of(w01):5d}  "
                  f"{first.load:.1f}/{noop.load:.1f}")
    print("host-tasks: of the no-op run (ok + skipped + failed over all hosts), cp1/w01: per host")
    for phase in ("cluster", "nodes"):
        uf, un, bf, bn = ufc_first[phase], ufc_noop[phase], base_first[phase], base_noop[phase]
        print(f"{phase} phase, baseline / ufcctl: first wall = {bf.wall / uf.wall:.2f}x, "
              f"CPU = {bf.cpu / uf.cpu:.2f}x; no-op wall = {bn.wall / un.wall:.2f}x, "
              f"CPU = {bn.cpu / un.cpu:.2f}x")
        record.ratio(f"{phase} baseline/ufcctl first CPU", bf.cpu / uf.cpu)
        record.ratio(f"{phase} baseline/ufcctl no-op CPU", bn.cpu / un.cpu)
    per = {name: run["nodes"].cpu / args.workers for name, run in
           (("ufcctl first", ufc_first), ("no-op", ufc_noop), ("baseline first", base_first),
            ("baseline no-op", base_noop))}
    print("node phase controller CPU per worker: " + ", ".join(f"{k} {v:.2f} s" for k, v in per.items()))
    for k, v in per.items():
        record.figure(f"node phase CPU per worker, {k}", v, "CPU-s")
    joins = ufc_first["nodes"]
    # the join benchmark (issue 26): joined (and, on NPU nodes with a driver, admitted) workers per minute
    # of the node phase, and what one controller would spend at 16,000 of them at this per-node cost
    print(f"joins: {args.workers / joins.wall * 60:.1f} workers/min on this lab; controller "
          f"{per['ufcctl first']:.2f} CPU-s per joined worker -> {per['ufcctl first'] * 16000 / 3600:.1f} "
          f"CPU-hours for 16,000 from one controller "
          f"({per['ufcctl first'] * 16000 / 3600 / (os.cpu_count() or 1):.1f} h of this machine's "
          f"{os.cpu_count()} cores if CPU-bound)")
    seconds = sorted(ufc_first["nodes"].node_seconds)
    if seconds:
        print(_projection(seconds[len(seconds) // 2], args.projection_workers))
    if args.one_lab:
        record.note = "--one-lab: the baseline's first run was a rerun on ufcctl's lab; not a measurement"
    record.write()


if __name__ == "__main__":
    main()
