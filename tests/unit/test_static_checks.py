"""The repository's own linters as tests, so CI runs them: ruff on the package, the tests and the lab's
emulators, mypy on the package (settings in pyproject.toml), ansible-lint with the production profile
on roles/, playbooks/ and molecule/ (.ansible-lint). Each failure prints the tool's findings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = BIN / tool
    if not exe.exists():
        pytest.fail(f"{tool} is not in {BIN}: scripts/setup.sh installs it (pip install -e '.[test]')")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    return subprocess.run(
        [str(exe), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False
    )


def test_ruff() -> None:
    proc = _run("ruff", "check", "ufcctl", "tests")  # tests/lab_standins: the lab's stand-ins
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy() -> None:
    proc = _run("mypy", "ufcctl")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ansible_lint_production_profile() -> None:
    proc = _run("ansible-lint", "--offline", "--nocolor", "-f", "pep8")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
