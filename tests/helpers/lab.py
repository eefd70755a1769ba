"""A test-owned lab for integration tests: its own name, subnet, state and inventory directories.

Every lab test module used to build the same environment and the same `lab up` / `lab down`
bracket; this is the one copy. Nothing here targets an address outside the lab's own subnet."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

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
        "CONTAINERS_CONF": str(ROOT / "ufcctl" / "lab" / "containers.conf"),
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


# The deployed stack shared by the deploy, etcd, NFS and VIP lab tests (tests/integration/conftest.py).
# One lab, one full `ufcctl deploy` of playbooks/deploy.yml; each of those modules used to bring up
# its own lab and deploy into it (about 30 min of the CI run's CPU went to the three extra deploys).
STACK_LAB = "itstack"
STACK_SUBNET = "10.89.71.0/24"  # a test-owned podman network; nothing else is ever targeted
STACK_MODULES = frozenset({"test_deploy_lab.py", "test_etcd_lab.py", "test_images_lab.py",
                           "test_monitoring_lab.py", "test_nfs_lab.py", "test_vip_failover.py",
                           "test_workers_lab.py"})
# Workers of the shared lab: enough for one to fail while the others finish (the node phase tests).
STACK_WORKERS = 3
# Lab-sized etcd defrag thresholds (the defaults are sized for 8 GiB databases); the timer itself never
# fires during the tests (a calendar date in the past): test_etcd_lab starts the units the timer starts.
STACK_TEST_VARS = {
    "etcd_defrag_rule": "dbSizeFree > 4*1024*1024",
    "etcd_defrag_compaction_keep_revisions": 0,
    "etcd_defrag_min_interval": 30,
    "etcd_defrag_on_calendar": "2000-01-01 00:00:00",
}


@dataclass(frozen=True)
class Stack:
    """A lab after its first full deploy. `deploy` is what `ufcctl deploy --output json` printed
    (None when it printed no JSON; `deploy_proc` then says why)."""

    work: Path
    inventory: Path
    env: dict[str, str]
    deploy_proc: subprocess.CompletedProcess[str]
    deploy: dict | None

    def require_deployed(self) -> None:
        """For the modules that only use the deployed stack: fail with the deploy's own output."""
        assert self.deploy_proc.returncode == 0 and self.deploy is not None, (
            f"the shared lab's first deploy failed (rc={self.deploy_proc.returncode}):\n"
            f"{self.deploy_proc.stdout[-3000:]}\n{self.deploy_proc.stderr[-3000:]}")


def deploy_json(inventory: Path, env: dict[str, str],
                *extra: str) -> tuple[subprocess.CompletedProcess[str], dict | None]:
    proc = ufcctl(["deploy", "--inventory", str(inventory), "--output", "json", *extra], env)
    try:
        return proc, json.loads(proc.stdout)
    except json.JSONDecodeError:
        return proc, None


@contextmanager
def deployed_stack(work: Path) -> Iterator[Stack]:
    """`lab up` (3 control planes + STACK_WORKERS workers), the lab-sized test vars, one full deploy (both
    phases); always `lab down`."""
    with running_lab(work, STACK_LAB, STACK_SUBNET, nodes=STACK_WORKERS) as env:
        inventory = work / "inventory"
        extra_vars = inventory / "group_vars" / "all" / "stack-test.yml"
        extra_vars.parent.mkdir(parents=True, exist_ok=True)
        extra_vars.write_text(yaml.safe_dump(STACK_TEST_VARS))
        proc, data = deploy_json(inventory, env)
        yield Stack(work, inventory, env, proc, data)
