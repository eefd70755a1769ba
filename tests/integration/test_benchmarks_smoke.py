"""The rollout benchmark runs in CI on a small fleet, so it cannot rot between the runs that measure.

It prints its ratios (ufcctl vs the ideal, plain ansible-playbook `serial:` vs ufcctl) into the test
log; nothing here asserts a duration (these machines are noisy: the numbers are noted on the issue
from full-size runs). What is asserted is that both sides did the work: the benchmark itself checks
the emulator's install counters and exits non-zero otherwise."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_upgrade_drivers_benchmark_runs_on_a_small_fleet() -> None:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    # 4 nodes, emulated install 2 s (one node 20 s), concurrency 2, one round
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "benchmarks" / "bench_upgrade_drivers.py"), "4", "2", "2", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(proc.stdout)
    ratios = dict(re.findall(r"(ufcctl / ideal|baseline / ufcctl) = ([0-9.]+)x", proc.stdout))
    assert set(ratios) == {"ufcctl / ideal", "baseline / ufcctl"}, proc.stdout
