"""Loading a 16,000-node inventory: ufcctl (read + resolve + validate) versus `ansible-inventory --list`.

Generates the inventory with tests/helpers/gen_inventory.py into a temporary directory, in the
topology scheme of inventories/sample/README.md:
  ranges    hosts.yml with `npu[00001:16000]`-style entries and ToR / super pod / rack / slice
            groups carrying the topology vars (about 3,400 groups, 400 KB);
  explicit  every NPU host listed with ansible_host and its topology as inline vars (3 MB).
Both tools read the same files in the same run, each in a fresh process. Printed: wall and CPU
seconds of each, the ratios, ufcctl's peak memory (max RSS of its process, and the Python heap
peak from tracemalloc in a separate run), ansible-inventory's max RSS, and the machine.
CPU seconds are the steadier figure on a shared machine (the load average is printed too).

    python tests/benchmarks/bench_inventory.py [--nodes 16000] [--style ranges|explicit|both] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script: make tests.helpers importable

from tests.benchmarks.benchlib import Record, take_record  # noqa: E402
from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory  # noqa: E402

UFCCTL_PROBE = """
import gc, json, resource, sys, time, tracemalloc
from pathlib import Path
from ufcctl.app.inventory import check_inventory
if sys.argv[2] == "tracemalloc":
    tracemalloc.start()
wall, cpu = time.perf_counter(), time.process_time()
result = check_inventory(Path(sys.argv[1]))
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
assert result.valid, [str(p) for p in result.problems][:5]
peak = tracemalloc.get_traced_memory()[1] if tracemalloc.is_tracing() else None
print(json.dumps({"wall": wall, "cpu": cpu, "hosts": len(result.inventory.hosts),
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "heap_peak": peak}))
"""


def run_ufcctl(directory: Path, mode: str = "plain") -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", UFCCTL_PROBE, str(directory), mode],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


ANSIBLE_PROBE = """
import json, resource, subprocess, sys, time
wall = time.perf_counter()
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True, check=True)
wall = time.perf_counter() - wall
use = resource.getrusage(resource.RUSAGE_CHILDREN)  # only ansible-inventory ran under this process
print(json.dumps({"wall": wall, "cpu": use.ru_utime + use.ru_stime, "maxrss_kb": use.ru_maxrss,
                  "hosts": len(json.loads(proc.stdout)["_meta"]["hostvars"])}))
"""


def run_ansible(binary: str, directory: Path, work: Path) -> dict[str, float]:
    config = work / "ansible.cfg"
    config.write_text("[defaults]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(config), ANSIBLE_LOCAL_TEMP=str(work / "tmp"))
    proc = subprocess.run(
        [sys.executable, "-c", ANSIBLE_PROBE, binary, "-i", str(directory), "--list"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {load}"
    )


def bench(style: str, nodes: int, repeat: int, binary: str, work: Path, record: Record) -> None:
    directory = write_cluster_inventory(work / style, ClusterShape(npu_nodes=nodes), style=style)
    size = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
    print(
        f"\n== {style}: {nodes} NPU nodes (+7 other hosts), {size / 1e6:.1f} MB of YAML in {directory.name}/"
    )
    print(f"   machine before: {machine()}")
    ours = [run_ufcctl(directory) for _ in range(repeat)]
    theirs = run_ansible(binary, directory, work)
    ours += [run_ufcctl(directory) for _ in range(repeat)]  # before and after: the load drifts
    traced = run_ufcctl(directory, "tracemalloc")
    assert {o["hosts"] for o in ours} == {theirs["hosts"]}, (ours[0]["hosts"], theirs["hosts"])
    wall, cpu = statistics.median(o["wall"] for o in ours), statistics.median(o["cpu"] for o in ours)
    print(
        f"   ufcctl load+validate (median of {len(ours)}): {wall:.2f} s wall, {cpu:.2f} s CPU; "
        f"max RSS {max(o['maxrss_kb'] for o in ours) / 1024:.0f} MiB, "
        f"Python heap peak {traced['heap_peak'] / 2**20:.0f} MiB"
    )
    print(
        f"   ansible-inventory --list (1 run): {theirs['wall']:.2f} s wall, {theirs['cpu']:.2f} s CPU; "
        f"max RSS {theirs['maxrss_kb'] / 1024:.0f} MiB"
    )
    print(
        f"   ratio ansible / ufcctl: {theirs['wall'] / wall:.1f}x wall, {theirs['cpu'] / cpu:.1f}x CPU "
        f"(target >= 20x)"
    )
    print(f"   machine after:  {machine()}")
    record.figure(f"{style} ufcctl load+validate CPU", cpu, "s")
    record.figure(f"{style} ansible-inventory --list CPU", theirs["cpu"], "s")
    record.ratio(f"{style} ansible / ufcctl CPU", theirs["cpu"] / cpu)


def main() -> None:
    record = take_record("bench_inventory")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=16000)
    parser.add_argument("--style", choices=["ranges", "explicit", "both"], default="ranges")
    parser.add_argument("--repeat", type=int, default=3, help="ufcctl runs before and after the Ansible run")
    args = parser.parse_args()
    binary = shutil.which("ansible-inventory", path=os.path.dirname(sys.executable))
    if binary is None:
        sys.exit(f"ansible-inventory is not installed beside {sys.executable}")
    styles = ["ranges", "explicit"] if args.style == "both" else [args.style]
    with tempfile.TemporaryDirectory(prefix="bench-inventory-") as tmp:
        for style in styles:
            bench(style, args.nodes, args.repeat, binary, Path(tmp), record)
    record.write()


if __name__ == "__main__":
    main()
