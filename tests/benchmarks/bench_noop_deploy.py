"""The no-op deploy on an already deployed lab: `ufcctl deploy` versus plain ansible-playbook, per phase.

The run operators repeat most (issue 29): every host already at its target. On a deployed lab
(the shared one in CI, `inventories/lab`), measured in the same run, each phase a process of its
own, controller CPU from a cgroup (tests/benchmarks/benchlib.py: the command and every descendant,
SSH ControlPersist masters included; each run opens its own connections):

  ufcctl    `ufcctl deploy --inventory INV --phase cluster`, then `--phase nodes` (the fleet engine:
            join token, then deploy-nodes.yml), the project's ansible.cfg
  baseline  `ansible-playbook -i INV playbooks/deploy.yml`, then `playbooks/join-token.yml
            playbooks/deploy-nodes.yml` with ansible-core's defaults (an empty ANSIBLE_CONFIG:
            forks 5, no pipelining, ControlPersist 60s, internal_poll_interval 0.001), the same
            state directory (so the same PKI: nothing is issued again)

Each side runs REPEAT times, alternating, so both see the same machine load; the median is
reported. Every run must change nothing (else this exits non-zero: a no-op that changes something
is a defect, and the lab must not be changed under the tests that share it). Nothing here judges
a time.

    python tests/benchmarks/bench_noop_deploy.py [--inventory inventories/lab] [--repeat 1]
        [--no-baseline] [--json PATH]

Hold the lab's lock around it where others share the lab (`flock /tmp/ufc-lab.lock ...`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import Measured, check, machine, measured, take_record  # noqa: E402

BIN = Path(sys.executable).parent
RECAP = re.compile(
    r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.MULTILINE)
PHASES = ("cluster", "nodes")


def _ufcctl(inventory: Path, phase: str, env: dict[str, str]) -> tuple[Measured, int, int]:
    """One no-op phase; (measurement, host-tasks, changed) from its --output json."""
    m = measured([str(BIN / "ufcctl"), "deploy", "--inventory", str(inventory), "--phase", phase,
                  "--output", "json"], env, ROOT)
    check(f"ufcctl deploy --phase {phase}", m.proc)
    out = json.loads(m.proc.stdout)
    changed = tasks = 0
    if phase == "cluster":
        for host in (out.get("cluster") or {}).get("hosts", {}).values():
            changed += host.get("changed", 0)
            tasks += host.get("ok", 0) + host.get("skipped", 0)
    else:
        nodes = (out.get("nodes") or {}).get("nodes", [])
        changed = sum(1 for n in nodes if n.get("changed"))
        tasks = len(nodes)
    return m, tasks, changed


def _baseline(inventory: Path, phase: str, env: dict[str, str]) -> tuple[Measured, int, int]:
    books = ["deploy.yml"] if phase == "cluster" else ["join-token.yml", "deploy-nodes.yml"]
    m = measured([str(BIN / "ansible-playbook"), "-i", str(inventory),
                  *(str(ROOT / "playbooks" / b) for b in books)], env, ROOT)
    check(f"baseline ansible-playbook {' '.join(books)}", m.proc)
    recap = RECAP.findall(m.proc.stdout)
    return m, sum(int(r[1]) + int(r[5]) for r in recap), sum(int(r[2]) for r in recap)


def main() -> None:
    record = take_record("bench_noop_deploy")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", type=Path, default=ROOT / "inventories" / "lab")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args()
    state = Path(os.environ.get("UFC_STATE_DIR", ROOT / ".ufc")).resolve()
    env = {**os.environ, "UFC_STATE_DIR": str(state),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    print(machine(), flush=True)
    sides = ["ufcctl"] + ([] if args.no_baseline else ["baseline"])
    runs: dict[tuple[str, str], list[Measured]] = {(s, p): [] for s in sides for p in PHASES}
    tasks: dict[tuple[str, str], int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.cfg"
        empty.write_text("[defaults]\n")
        base_env = {**env, "ANSIBLE_CONFIG": str(empty), "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
                    "ANSIBLE_NOCOLOR": "1"}
        for _ in range(args.repeat):
            for side in sides:
                for phase in PHASES:
                    m, n, changed = (_ufcctl(args.inventory, phase, env) if side == "ufcctl"
                                     else _baseline(args.inventory, phase, base_env))
                    if changed:
                        sys.exit(f"{side} {phase}: the no-op changed {changed} (host-)task(s)\n"
                                 f"{m.proc.stdout[-3000:]}")
                    runs[side, phase].append(m)
                    tasks[side, phase] = n
                    print(f"{side:9} {phase:8} {m.wall:7.1f} s {m.cpu:7.1f} CPU-s  load "
                          f"{os.getloadavg()[0]:.1f}", flush=True)
    how = runs["ufcctl", "cluster"][0].how
    print(f"controller CPU from {how}; medians of {args.repeat}:")
    print(f"{'':20} {'wall s':>8} {'CPU s':>8} {'host-tasks':>10}")
    for side in sides:
        for phase in PHASES:
            wall = statistics.median(m.wall for m in runs[side, phase])
            cpu = statistics.median(m.cpu for m in runs[side, phase])
            print(f"{side + ' ' + phase:20} {wall:8.1f} {cpu:8.1f} {tasks[side, phase]:10d}")
            record.figure(f"{side} no-op {phase} wall", wall, "s")
            record.figure(f"{side} no-op {phase} CPU", cpu, "CPU-s")
        total = sum(statistics.median(m.cpu for m in runs[side, p]) for p in PHASES)
        wall = sum(statistics.median(m.wall for m in runs[side, p]) for p in PHASES)
        print(f"{side + ' total':20} {wall:8.1f} {total:8.1f}")
        record.figure(f"{side} no-op total wall", wall, "s")
        record.figure(f"{side} no-op total CPU", total, "CPU-s")
    if "baseline" in sides:
        u = record.figures["ufcctl no-op total CPU"]["value"]
        b = record.figures["baseline no-op total CPU"]["value"]
        uw = record.figures["ufcctl no-op total wall"]["value"]
        bw = record.figures["baseline no-op total wall"]["value"]
        print(f"baseline / ufcctl: CPU {b / u:.2f}x, wall {bw / uw:.2f}x (aim >= 1.5)")  # type: ignore[operator]
        record.ratio("baseline/ufcctl no-op CPU", b / u)  # type: ignore[operator]
        record.ratio("baseline/ufcctl no-op wall", bw / uw)  # type: ignore[operator]
    record.write()


if __name__ == "__main__":
    main()
