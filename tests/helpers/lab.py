"""A test-owned lab for integration tests: its own name, subnet, state and inventory directories.

Every lab test module used to build the same environment and the same `lab up` / `lab down`
bracket; this is the one copy. Nothing here targets an address outside the lab's own subnet."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
UFCCTL = str(BIN / "ufcctl")


def lab_env(work: Path, lab: str, **extra: str) -> dict[str, str]:
    """The environment every ufcctl/podman call of one test lab runs with."""
    env = dict(os.environ)
    env.update({
        "UFC_STATE_DIR": str(work / "state"),
        "UFC_LAB_NAME": lab,
        "UFC_LAB_INVENTORY": str(work / "inventory"),
        "CONTAINERS_CONF": str(ROOT / "templates" / "lab" / "containers.conf"),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        **extra,
    })
    return env


def ufcctl(args: list[str], env: dict[str, str], timeout: int = 2400) -> subprocess.CompletedProcess[str]:
    return subprocess.run([UFCCTL, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=False)


@contextmanager
def running_lab(work: Path, lab: str, subnet: str, nodes: int, **extra_env: str) -> Iterator[dict[str, str]]:
    """`lab up` (3 control planes + `nodes` workers on `subnet`), yield the env, always `lab down`.
    The inventory is written to `work / "inventory"`."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    env = lab_env(work, lab, **extra_env)
    up = ufcctl(["lab", "up", "--nodes", str(nodes), "--subnet", subnet], env)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield env
    finally:
        down = ufcctl(["lab", "down"], env)
        assert down.returncode == 0, down.stdout + down.stderr
