"""What the lab benchmarks share: the machine line, failing loudly, and a command's controller CPU.

Controller CPU of a command is taken from a cgroup made for it (cgroup v1 `cpuacct` or v2
`cpu.stat`): the command starts inside it, so it counts the command and every descendant, including
the SSH ControlPersist masters that detach from their parent and outlive it (getrusage never sees
those). After the command ends the processes left in the group (those masters) are stopped, so every
measured run opens its own connections and nothing leaks into the next one. Where no cgroup can be
made (not root, no cgroupfs), it falls back to getrusage(RUSAGE_CHILDREN) and says so.
"""

from __future__ import annotations

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
