"""What the lab benchmarks share: the machine line, failing loudly, and a command's controller CPU.

Controller CPU of a command is taken from a cgroup made for it (cgroup v1 `cpuacct` or v2
`cpu.stat`): the command starts inside it, so it counts the command and every descendant, including
the SSH ControlPersist masters that detach from their parent and outlive it (getrusage never sees
those). After the command ends the processes left in the group (those masters) are stopped, so every
measured run opens its own connections and nothing leaks into the next one. Where no cgroup can be
made (not root, no cgroupfs), it falls back to getrusage(RUSAGE_CHILDREN) and says so.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

CGROUP_V1 = Path("/sys/fs/cgroup/cpuacct")
CGROUP_V2 = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Measured:
    wall: float
    cpu: float  # user + sys seconds
    proc: subprocess.CompletedProcess[str]
    how: str  # "cgroup" (with detached SSH masters) or "getrusage" (without them)


def machine() -> str:
    return (f"machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}, "
            f"load average now {os.getloadavg()[0]:.1f}")


def check(what: str, proc: subprocess.CompletedProcess[str], ok: tuple[int, ...] = (0,)) -> None:
    """Exit the benchmark with the failing tasks first (a long run's tail is only the recap)."""
    if proc.returncode not in ok:
        fatal = [line for line in proc.stdout.splitlines() if line.startswith(("fatal:", "failed:"))]
        sys.exit(f"{what} failed (rc {proc.returncode}):\n" + "\n".join(fatal)[-6000:]
                 + f"\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def _new_group() -> tuple[Path, str] | None:
    """A fresh cgroup and the file holding its CPU usage, or None when none can be made here."""
    for root, usage in ((CGROUP_V1, "cpuacct.usage"), (CGROUP_V2, "cpu.stat")):
        if not (root / "cgroup.procs").exists():  # not a cgroup hierarchy (e.g. the v1 tmpfs)
            continue
        group = root / f"ufc-bench-{uuid.uuid4().hex[:8]}"
        try:
            group.mkdir()
        except OSError:
            continue
        if (group / usage).exists():
            return group, usage
        group.rmdir()
    return None


def _usage_seconds(group: Path, usage: str) -> float:
    text = (group / usage).read_text()
    if usage == "cpuacct.usage":  # nanoseconds
        return int(text) / 1e9
    fields = dict(line.split() for line in text.splitlines())  # cgroup v2 cpu.stat
    return int(fields["usage_usec"]) / 1e6


def _empty_and_remove(group: Path) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while (group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.1)
    group.rmdir()


def measured(cmd: list[str], env: dict[str, str], cwd: Path, timeout: int = 7200) -> Measured:
    """Run `cmd` to its end; its wall time and the controller CPU of it and all its descendants."""
    made = _new_group()
    if made is None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              check=False)
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return Measured(wall, cpu, proc, "getrusage")
    group, usage = made
    procs = str(group / "cgroup.procs")

    def join_group() -> None:  # in the child, before exec: everything it starts stays in the group
        with open(procs, "w") as fh:
            fh.write(str(os.getpid()))

    try:
        t0 = time.monotonic()
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              check=False, preexec_fn=join_group)
        wall = time.monotonic() - t0
        cpu = _usage_seconds(group, usage)
    finally:
        _empty_and_remove(group)
    return Measured(wall, cpu, proc, "cgroup")


# ---- the results record (tests/benchmarks/results/; results_table.py generates docs/results.md from it)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
RECORD_FLAG = "--json"
SCHEMA = 1


def _git(*args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True,
                          text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def machine_info() -> dict[str, object]:
    """The machine a figure was measured on: what a reader needs to compare two records."""
    try:
        mem = next(int(line.split()[1]) // 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal:"))
    except (OSError, StopIteration, ValueError):
        mem = 0
    return {"platform": platform.platform(), "cpus": os.cpu_count() or 0, "mem_mib": mem,
            "python": platform.python_version()}


class Record:
    """One benchmark run's figures, written as JSON when the benchmark got `--json PATH`.

    Shape (schema 1; tests/unit/benchmarks/test_benchlib_record.py checks it): benchmark, args,
    commit (full hash, dirty when the worktree had changes), recorded (UTC, ISO 8601), machine,
    load (1-minute load average at start and end: a loaded machine's figures say so), figures
    ({name: {"value", "unit"}}), ratios ({name: value}, same-run ratios such as baseline/ufcctl), note.
    PATH may be a directory (e.g. tests/benchmarks/results/): the file is then named
    <date>-<commit>-<benchmark>.json in it.
    """

    def __init__(self, benchmark: str, path: Path | None, args: list[str]):
        self.benchmark = benchmark
        self.path = path
        self.args = args
        self.load_start = os.getloadavg()[0]
        self.figures: dict[str, dict[str, object]] = {}
        self.ratios: dict[str, float] = {}
        self.note = ""

    def figure(self, name: str, value: float, unit: str) -> None:
        self.figures[name] = {"value": round(float(value), 4), "unit": unit}

    def ratio(self, name: str, value: float) -> None:
        self.ratios[name] = round(float(value), 4)

    def to_json(self) -> dict[str, object]:
        commit = _git("rev-parse", "HEAD")
        return {
            "schema": SCHEMA,
            "benchmark": self.benchmark,
            "args": self.args,
            "commit": commit,
            "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
            "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": machine_info(),
            "load": {"start": round(self.load_start, 2), "end": round(os.getloadavg()[0], 2)},
            "figures": self.figures,
            "ratios": self.ratios,
            "note": self.note,
        }

    def write(self) -> Path | None:
        """Write the record where --json said (nothing without the flag); return the file."""
        if self.path is None:
            return None
        data = self.to_json()
        target = self.path
        if target.is_dir():
            target = target / (f"{str(data['recorded'])[:10]}-{str(data['commit'])[:7] or 'nocommit'}-"
                               f"{self.benchmark}.json")
        target.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"record: {target}", flush=True)
        return target


def take_record(benchmark: str, argv: list[str] | None = None) -> Record:
    """Remove `--json PATH` (or `--json=PATH`) from argv (sys.argv by default) before the benchmark
    parses its own arguments; the Record writes there at the end, or nowhere without the flag."""
    argv = sys.argv if argv is None else argv
    path: Path | None = None
    rest: list[str] = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == RECORD_FLAG:
            if i + 1 >= len(argv):
                sys.exit(f"{RECORD_FLAG} needs a file or directory (e.g. {RESULTS_DIR})")
            path = Path(argv[i + 1])
            i += 2
            continue
        if arg.startswith(RECORD_FLAG + "="):
            path = Path(arg.split("=", 1)[1])
        else:
            rest.append(arg)
        i += 1
    argv[1:] = rest
    return Record(benchmark, path, rest)
