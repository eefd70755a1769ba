"""Artifact bytes per host-task: ufcctl's runner adapter versus ansible-runner's defaults, same run.

Runs one playbook of TASKS trivial tasks on HOSTS local-connection hosts twice: once through
ufcctl.engine.runner.run_playbook (summary + failures only) and once through ansible_runner.run
with its defaults (every event written to job_events/, stdout file kept). Prints bytes and files
per host-task for both and the ratio. No network: every host uses the local connection.

    python tests/benchmarks/bench_artifacts.py [HOSTS] [TASKS]
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from ufcctl.domain.inventory.model import Host
from ufcctl.engine.run_inventory import render_inventory
from ufcctl.engine.runner import RunOptions, ansible_binary, run_playbook


def _tree_size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    # st_blocks counts what the files really occupy on disk (4 KiB minimum per small file)
    return sum(p.stat().st_blocks * 512 for p in files), len(files)


def main() -> None:
    from benchlib import take_record  # this directory: the script's own

    record = take_record("bench_artifacts")
    hosts_n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    tasks_n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    host_tasks = hosts_n * tasks_n
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["UFC_STATE_DIR"] = str(work / "ufc")
        tasks = "\n".join(
            f"    - name: task {i}\n      ansible.builtin.command: 'true'\n      changed_when: false"
            for i in range(tasks_n)
        )
        playbook = work / "play.yml"
        playbook.write_text(f"- hosts: all\n  gather_facts: false\n  tasks:\n{tasks}\n")
        base = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
        hosts = [Host(f"h{i:04d}", dict(base), frozenset({"all"})) for i in range(hosts_n)]

        t0 = time.monotonic()
        result = run_playbook(playbook, hosts, RunOptions(forks=10))
        ufc_seconds = time.monotonic() - t0
        assert result.succeeded, result.to_json()
        ufc_bytes, ufc_files = _tree_size(result.run_dir)

        import ansible_runner

        baseline_dir = work / "baseline"
        baseline_dir.mkdir()
        t0 = time.monotonic()
        runner = ansible_runner.run(
            private_data_dir=str(baseline_dir),
            playbook=str(playbook),
            inventory=render_inventory(hosts),
            forks=10,
            quiet=True,
            envvars={"PATH": f"{Path(ansible_binary()).parent}:{os.environ['PATH']}"},
        )
        base_seconds = time.monotonic() - t0
        assert runner.status == "successful", runner.status
        base_bytes, base_files = _tree_size(baseline_dir / "artifacts")

    print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cpu, "
          f"Python {platform.python_version()}")
    print(f"workload: {hosts_n} hosts x {tasks_n} tasks = {host_tasks} host-tasks (local connection)")
    print(f"ufcctl adapter : {ufc_bytes:>10} bytes on disk, {ufc_files:>6} files, "
          f"{ufc_bytes / host_tasks:8.1f} B/host-task, {ufc_seconds:.1f}s")
    print(f"runner default : {base_bytes:>10} bytes on disk, {base_files:>6} files, "
          f"{base_bytes / host_tasks:8.1f} B/host-task, {base_seconds:.1f}s")
    print(f"ratio (default / ufcctl bytes): {base_bytes / max(ufc_bytes, 1):.0f}x")
    scale = 16000 * 30
    print(f"projected for 16,000 hosts x 30 tasks: ufcctl {ufc_bytes / host_tasks * scale / 2**20:.0f} MiB, "
          f"runner default {base_bytes / host_tasks * scale / 2**30:.1f} GiB")
    record.figure("ufcctl bytes per host-task", ufc_bytes / host_tasks, "B")
    record.figure("runner default bytes per host-task", base_bytes / host_tasks, "B")
    record.figure("ufcctl run wall", ufc_seconds, "s")
    record.ratio("runner default / ufcctl bytes", base_bytes / max(ufc_bytes, 1))
    record.write()


if __name__ == "__main__":
    main()
