"""The rollout and deploy benchmarks run in CI in a small form, so they cannot rot between measuring runs.

They print their ratios (rollout: ufcctl vs the ideal, plain ansible-playbook `serial:` vs ufcctl;
deploy: plain ansible-playbook with Ansible's defaults vs ufcctl) into the test log; nothing here
asserts a duration (these machines are noisy: the numbers are noted on the issue from full-size
runs). What is asserted is that both sides did the work: the rollout benchmark checks the emulator's
install counters, the deploy benchmark that both no-op reruns changed nothing, and both exit
non-zero otherwise. Each writes its results record (`--json`, benchlib.Record) as a measuring run does.

Each runs at the smallest size that still takes every phase and check of its benchmark: the code path is
what rots, and a second node, round or lab of the same kind adds CI time but no code."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _record(path: Path, benchmark: str) -> dict:
    """The results record the benchmark wrote (`--json PATH`): its name and some figures."""
    data = json.loads(path.read_text())
    assert data["benchmark"] == benchmark and data["figures"], data
    return data


def test_upgrade_drivers_benchmark_runs_on_a_small_fleet(tmp_path: Path) -> None:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    # 2 nodes, median emulated install 0.2 s, concurrency 2: one batch holding its 10x node and the hung
    # node (the smallest fleet with both; the installer timeout is 1.5 x the slowest draw + 10 s, so a
    # short median keeps each run's wait for the hung node short): two ufcctl rounds, the serial
    # baseline and the no-op rerun, each checked by the benchmark itself
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "benchmarks" / "bench_upgrade_drivers.py"), "2", "0.2", "2",
         "--json", str(tmp_path / "record.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(proc.stdout)
    assert re.search(r"^baseline / ufcctl: ufcctl round 1 [0-9.]+x, ufcctl round 2 [0-9.]+x", proc.stdout,
                     re.MULTILINE), proc.stdout
    assert re.search(r"^ufcctl / LB: ufcctl round 1 [0-9.]+x, ufcctl round 2 [0-9.]+x", proc.stdout,
                     re.MULTILINE), proc.stdout
    cpu = re.search(r"controller CPU per node: upgrading ([0-9.]+) CPU-s .* no-op ([0-9.]+) CPU-s",
                    proc.stdout)
    assert cpu and float(cpu[1]) > 0 and float(cpu[2]) > 0, proc.stdout
    _record(tmp_path / "record.json", "bench_upgrade_drivers")


def test_deploy_benchmark_runs_on_a_small_lab(tmp_path: Path) -> None:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    # 3 control planes + 1 worker, the two roles every node runs: the benchmark's whole path (ufcctl and
    # plain ansible-playbook, first and no-op runs, summary.json and the recap parsed, the projection)
    # on one lab (--one-lab: the baseline after ufcctl, not on a second fresh lab) and a 500-worker
    # projection inventory; the full deploy is measured by hand (docs/results.md, "Benchmarks")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "benchmarks" / "bench_deploy.py"), "1", "--tags",
         "preflight,node_tuning", "--one-lab", "--projection-workers", "500",
         "--json", str(tmp_path / "record.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(proc.stdout)
    rows = re.findall(r"^(ufcctl|ansible-playbook) (cluster|nodes) +([0-9.]+) +([0-9.]+) +([0-9.]+) "
                      r"+([0-9.]+) +(\d+) +(\d+) +(\d+)", proc.stdout, re.MULTILINE)
    assert [row[:2] for row in rows] == [("ufcctl", "cluster"), ("ansible-playbook", "cluster"),
                                         ("ufcctl", "nodes"), ("ansible-playbook", "nodes")], proc.stdout
    # both sides ran the same node-phase plays on the worker: the same tasks there
    assert rows[2][8] == rows[3][8] and int(rows[2][8]) > 0, proc.stdout
    for phase in ("cluster", "nodes"):
        assert re.search(rf"{phase} phase, baseline / ufcctl: first wall = [0-9.]+x, CPU = [0-9.]+x; no-op "
                         r"wall = [0-9.]+x, CPU = [0-9.]+x", proc.stdout), proc.stdout
    assert "node phase controller CPU per worker: ufcctl first" in proc.stdout
    assert re.search(r"^projection for 500 workers .* h; pacing floor [0-9.]+ min$", proc.stdout,
                     re.MULTILINE), proc.stdout
    _record(tmp_path / "record.json", "bench_deploy")


def test_engine_simulation_benchmark_runs_on_a_small_fleet() -> None:
    # 120 simulated nodes, C=10, time compressed 2000x: the real engine (plan, order, window, gate
    # socket, state store) against the simulated executor, both orders, in well under a minute
    nodes = 120
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "benchmarks" / "bench_rollout_engine.py"), str(nodes), "10",
         "2000"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(proc.stdout)
    rows = re.findall(r"^(fifo|longest) +(\w+) +(\d+) +(\d+) +[0-9.]+ +([0-9.]+) ", proc.stdout, re.MULTILINE)
    assert [row[0] for row in rows] == ["fifo", "longest"], proc.stdout
    for _order, _status, done, failed, ms_per_node in rows:
        # every node ended exactly once: the one hung node failed at its deadline, the rest are done
        assert (int(done), int(failed)) == (nodes - 1, 1), proc.stdout
        assert float(ms_per_node) > 0, proc.stdout
    assert re.search(r"lower bound max\(max Ti, sum Ti / C\) = \d+s", proc.stdout), proc.stdout


def test_ansible_overhead_benchmark_runs_small(tmp_path: Path) -> None:
    # 1 local host, 1 and 2 debug tasks: every variant (settings, facts, ufcctl's runner) runs and reports
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "benchmarks" / "bench_ansible_overhead.py"), "--hosts", "1",
         "--tasks", "1,2", "--json", str(tmp_path / "record.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(proc.stdout)
    for variant in ("defaults", "ufcctl cfg", "no callbacks", "facts", "ufcctl runner"):
        assert re.search(rf"^  {variant} +-?[0-9.]+ ms per host-task", proc.stdout, re.MULTILINE), variant
    _record(tmp_path / "record.json", "bench_ansible_overhead")


def test_marginal_benchmark_runs_on_a_small_lab(tmp_path: Path) -> None:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    # upgrade-drivers on a lab of its own (2 workers): no-op and upgrading, one node against both,
    # each run checked by the benchmark (nothing changed on a no-op, every node upgraded otherwise)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "benchmarks" / "bench_marginal.py"), "--kinds",
         "upgrade-drivers", "--nodes", "2", "--lab", "smkmg", "--subnet", "10.89.94.0/24",
         "--json", str(tmp_path / "record.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(proc.stdout)
    for state in ("no-op", "upgrading"):
        assert re.search(rf"^  upgrade-drivers +{state} +this +marginal -?[0-9.]+ CPU-s/node", proc.stdout,
                         re.MULTILINE), proc.stdout
    _record(tmp_path / "record.json", "bench_marginal")


def test_scale_rehearsal_runs_on_twenty_kwok_nodes(tmp_path: Path) -> None:
    # the real control plane on loopback (no container), 20 kwok nodes on two ToRs (the label plan, the
    # per-node label baseline and the reads cost per node; at kubectl's client-side 5 QPS, 100 nodes
    # took ~20 s in the label plan alone): registration until Ready, ufcctl's label plan with the real
    # kubectl, the readiness read; the benchmark exits 1 when a Node is not Ready, a label is missing or
    # the read finds fewer Nodes (tests/benchmarks/bench_scale.py)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "benchmarks" / "bench_scale.py"), "--nodes", "20",
         "--json", str(tmp_path / "record.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(proc.stdout)
    assert re.search(r"^--- 20 nodes$", proc.stdout, re.MULTILINE), proc.stdout
    assert re.search(r"^labels: \d+ kubectl call\(s\) in [0-9.]+ s", proc.stdout, re.MULTILINE), proc.stdout
    assert re.search(r"^readiness read [0-9.]+ s", proc.stdout, re.MULTILINE), proc.stdout
    assert re.search(r"^SLO \(p99", proc.stdout, re.MULTILINE), proc.stdout
    _record(tmp_path / "record.json", "bench_scale")
