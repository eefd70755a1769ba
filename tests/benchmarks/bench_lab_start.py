"""Lab start time: `podman run` one at a time versus in parallel, same machine, same run.

Brings a throwaway lab (3 control planes + WORKERS) up and down once per parallelism level, on a
free subnet under 10.89.128.0/17 and its own state/inventory directories, and prints per level
the time to start the containers, the time until every node is booted and answers SSH, the total,
and `lab down`; ratios are against parallelism 1 measured in the same run. Needs podman and the
lab image (`ufcctl lab image`).

    python tests/benchmarks/bench_lab_start.py [WORKERS] [LEVELS]     # e.g. 6 1,4,8
"""

from __future__ import annotations

import ipaddress
import json
import os
import platform
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ufcctl.lab.lab import LabSettings, lab_down, lab_up
from ufcctl.lab.podman import Podman


def _free_subnet(podman: Podman) -> str:
    used = []
    for name in podman.run(["network", "ls", "--format", "{{.Name}}"]).stdout.split():
        for net in json.loads(podman.run(["network", "inspect", name]).stdout)[0].get("subnets") or []:
            used.append(ipaddress.ip_network(net["subnet"]))
    for net in ipaddress.ip_network("10.89.128.0/17").subnets(new_prefix=24):
        if not any(net.overlaps(u) for u in used):
            return str(net)
    raise SystemExit("no free /24 in 10.89.128.0/17")


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main() -> None:
    from benchlib import take_record  # this directory: the script's own

    record = take_record("bench_lab_start")
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    levels = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "1,4,8").split(",")]
    podman = Podman()
    subnet = _free_subnet(podman)
    mem = subprocess.run(["free", "-m"], capture_output=True, text=True, check=False).stdout.splitlines()[1:2]
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, {mem[0] if mem else ''}")
    print(f"lab: 3 control planes + {workers} workers on {subnet}; load before: {_load()}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for level in levels:
            settings = LabSettings(lab="bn" + secrets.token_hex(3), inventory_dir=Path(tmp) / f"inv{level}",
                                   state=Path(tmp) / "state")
            t0 = time.monotonic()
            result = lab_up(settings, lambda _m: None, workers=workers, subnet=subnet, podman=podman,
                            parallel_starts=level)
            total = time.monotonic() - t0
            t0 = time.monotonic()
            lab_down(settings, lambda _m: None, podman=podman)
            down = time.monotonic() - t0
            rows.append((level, result.seconds["start"], result.seconds["ready"], total, down, _load()))
    base = rows[0]
    print(f"{'parallel':>8} {'start s':>8} {'ready s':>8} {'up s':>7} {'down s':>7} {'up ratio':>9}  load")
    for level, start, ready, total, down, load in rows:
        ratio = total / base[3]
        print(f"{level:>8} {start:>8.1f} {ready:>8.1f} {total:>7.1f} {down:>7.1f} {ratio:>9.2f}  {load}")
        record.figure(f"parallel {level} lab up", total, "s")
        record.figure(f"parallel {level} lab down", down, "s")
        record.ratio(f"parallel {level} / parallel {base[0]} up", ratio)
    record.write()


if __name__ == "__main__":
    main()
