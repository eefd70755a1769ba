"""The shared lab of the integration tests: the README's main job (`./scripts/run.sh`) run as written.

Nothing here targets an address outside the lab's own subnet."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pytest

from ufcctl.lab.layout import (
    DEFAULT_LAB,
    DEFAULT_SUBNET,
    DEFAULT_WORKERS,
    KUBE_EMULATED,
    KUBE_MODES,
    network_name,
)
from ufcctl.lab.nodes import LABEL_KUBE
from ufcctl.rollout.store import StateStore

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
UFCCTL = str(BIN / "ufcctl")


def ufcctl(args: list[str], env: dict[str, str], timeout: int = 2400) -> subprocess.CompletedProcess[str]:
    return subprocess.run([UFCCTL, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=False)


# The deployed stack shared by the deploy, etcd, image, monitoring, NFS, VIP and worker lab tests
# (tests/integration/conftest.py): the README's main job itself, `./scripts/run.sh` run as written from the
# checkout root (setup, `ufcctl lab up`, `ufcctl deploy --inventory lab`, `ufcctl health --inventory lab`).
# If the README's command breaks, every one of these tests is red. It makes the default lab: its name,
# subnet (a podman network the lab owns; nothing else is ever targeted), ./inventories/lab and ./.ufc.
STACK_LAB = DEFAULT_LAB
STACK_SUBNET = DEFAULT_SUBNET
STACK_WORKERS = DEFAULT_WORKERS
STACK_MODULES = frozenset({"test_certs_lab.py", "test_cluster_objects_lab.py", "test_deploy_lab.py",
                           "test_etcd_lab.py",
                           "test_images_lab.py",
                           "test_main_job_lab.py",
                           "test_monitoring_lab.py", "test_nfs_lab.py", "test_npu_fabric_lab.py",
                           "test_vip_failover.py",
                           "test_workers_lab.py", "test_workers_remove_cp_lab.py",
                           "test_workers_remove_lab.py",
                           "test_workers_upgrade_lab.py"})
MAIN_JOB = ROOT / "scripts" / "run.sh"
STACK_INVENTORY = ROOT / "inventories" / "lab"
STACK_STATE = ROOT / ".ufc"


@dataclass(frozen=True)
class Stack:
    """A lab after the README's main job. `main_job` is what `./scripts/run.sh` did; `deploy` is its first
    deploy as `ufcctl deploy --output json` would print it, rebuilt from the run's own records (the
    cluster phase's summary.json, the node phase's run in state.db); None when there is none."""

    work: Path
    inventory: Path
    env: dict[str, str]
    main_job: subprocess.CompletedProcess[str]
    deploy: dict | None

    @property
    def deploy_proc(self) -> subprocess.CompletedProcess[str]:
        return self.main_job

    @cached_property
    def kube(self) -> str:
        """What runs Kubernetes in the stack (ufcctl/lab/layout.py KUBE_MODES): the lab network's label."""
        return lab_kube_mode(STACK_LAB, self.env)

    def require_deployed(self) -> None:
        """For the modules that only use the deployed stack: fail with the main job's own output."""
        assert self.main_job.returncode == 0 and self.deploy is not None, (
            f"the README's main job (./scripts/run.sh) failed (rc={self.main_job.returncode}):\n"
            f"{self.main_job.stdout[-3000:]}\n{self.main_job.stderr[-3000:]}")


def kill_9_when(proc: subprocess.Popen, ready: Callable[[], bool], what: str, polls: int = 1200,
                interval: float = 0.5) -> None:
    """SIGKILL `proc` (a ufcctl run) as soon as `ready()` says so, polled every `interval` s; fails the
    test when the run ends first or `what` never happens. The run is killed whatever the outcome."""
    try:
        for _ in range(polls):
            assert proc.poll() is None, f"the run ended (rc {proc.returncode}) before it could be killed"
            if ready():
                break
            time.sleep(interval)
        else:
            pytest.fail(f"the run never got to {what}")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()


def lab_kube_mode(lab: str, env: dict[str, str]) -> str:
    """`emulated` or `real`: the label `lab up` gave the lab's network (a lab without one is emulated)."""
    proc = subprocess.run(["podman", "network", "inspect", network_name(lab), "--format",
                           "{{index .Labels \"" + LABEL_KUBE + "\"}}"], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    mode = proc.stdout.strip()
    return mode if proc.returncode == 0 and mode in KUBE_MODES else KUBE_EMULATED


def deploy_json(inventory: Path, env: dict[str, str],
                *extra: str) -> tuple[subprocess.CompletedProcess[str], dict | None]:
    proc = ufcctl(["deploy", "--inventory", str(inventory), "--output", "json", *extra], env)
    try:
        return proc, json.loads(proc.stdout)
    except json.JSONDecodeError:
        return proc, None


def main_job_env() -> dict[str, str]:
    """The environment a user has: none of the variables the test labs use to move their files."""
    drop = {"UFC_STATE_DIR", "UFC_LAB_NAME", "UFC_LAB_INVENTORY"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def first_deploy(state: Path, since: float = 0.0) -> dict | None:
    """The first deploy's two phases from what it recorded: the oldest deploy.yml summary and the
    oldest deploy-nodes run written after `since` (a checkout's .ufc/ keeps earlier labs' runs), in the
    shape of `ufcctl deploy --output json`."""
    summaries = sorted((p for p in (state / "runs").glob("*/summary.json") if p.stat().st_mtime >= since),
                       key=lambda p: p.stat().st_mtime)
    cluster = next((json.loads(p.read_text()) for p in summaries
                    if json.loads(p.read_text()).get("playbook") == "deploy.yml"), None)
    if cluster is None or not (state / "state.db").is_file():
        return None
    with StateStore(state / "state.db") as store:
        runs = [r for r in store.runs("deploy-nodes") if r.status and r.created >= since]
        if not runs:
            return {"cluster": cluster, "nodes": None, "skipped": []}
        run = min(runs, key=lambda r: r.created)
        nodes = [{"host": n.host, "state": n.state, "changed": n.changed} for n in store.nodes(run.run_id)]
    return {"cluster": cluster, "skipped": [],
            "nodes": {"kind": run.kind, "status": run.status, "run_id": run.run_id, "nodes": nodes,
                      "steps": run.steps}}


# A contributor's shortcut, never set in CI: `./scripts/run.sh > FILE 2>&1; echo "rc=$?" >> FILE` once,
# then `UFC_TEST_MAIN_JOB_LOG=FILE pytest tests/integration/test_x_lab.py` reuses that lab (left up).
REUSE_ENV = "UFC_TEST_MAIN_JOB_LOG"


def _stack_env(env: dict[str, str]) -> dict[str, str]:
    # UFC_STATE_DIR explicit: every test's ufcctl runs with cwd=ROOT anyway
    return {**env, "CONTAINERS_CONF": str(ROOT / "ufcctl" / "lab" / "containers.conf"),
            "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "UFC_STATE_DIR": str(STACK_STATE)}


@contextmanager
def deployed_stack(work: Path) -> Iterator[Stack]:
    """`./scripts/run.sh` from the checkout root, exactly as the README says; always `lab down`. `work` is
    the tests' own scratch directory (measurements they write)."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    if os.environ.get(REUSE_ENV):
        log, _, rc = Path(os.environ[REUSE_ENV]).read_text().rstrip().rpartition("\nrc=")
        reused = subprocess.CompletedProcess([str(MAIN_JOB)], int(rc) if rc.isdigit() else -1, log, "")
        # the lab's first deploy, not an earlier lab's (the checkout's .ufc/ keeps every lab's runs): the
        # runs written since `lab up` wrote the lab's inventory
        marker = STACK_INVENTORY / ".ufcctl-lab"
        since = marker.stat().st_mtime if marker.exists() else 0.0
        first = first_deploy(STACK_STATE, since)
        yield Stack(work, STACK_INVENTORY, _stack_env(main_job_env()), reused, first)
        return
    if (STACK_INVENTORY / ".ufcctl-lab").exists() or STACK_INVENTORY.exists():
        pytest.fail(f"{STACK_INVENTORY} exists: a lab is up in this checkout. The lab tests bring up the "
                    "README's own lab and take it down after; run `ufcctl lab down` first")
    env = main_job_env()
    started = time.time()
    main_job = subprocess.run([str(MAIN_JOB)], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=3600, check=False)
    stack_env = _stack_env(env)
    try:
        yield Stack(work, STACK_INVENTORY, stack_env, main_job, first_deploy(STACK_STATE, started))
    finally:
        down = ufcctl(["lab", "down"], stack_env)
        assert down.returncode == 0, down.stdout + down.stderr


# haproxy's `show stat` through the admin socket roles/apiserver_lb opens (python3 of the lab image).
HAPROXY_STAT = ("import socket; s = socket.socket(socket.AF_UNIX); s.connect('/run/haproxy/admin.sock'); "
                "s.sendall(b'show stat\\n'); print(s.makefile().read())")


def haproxy_servers(env: dict[str, str], hosts: list[str]) -> dict[tuple[str, str, str], dict[str, str]]:
    """(haproxy host, backend, server) -> its `show stat` row, for the servers of both apiserver backends
    of each host's haproxy."""
    found = {}
    for host in hosts:
        lines = subprocess.run(["podman", "exec", host, "python3", "-c", HAPROXY_STAT], env=env,
                               capture_output=True, text=True, timeout=120, check=False).stdout.splitlines()
        head = lines[0].lstrip("# ").split(",")
        for line in lines[1:]:
            row = dict(zip(head, line.split(","), strict=False))
            if row.get("pxname", "").startswith("apiserver_") and row.get("svname") not in ("FRONTEND",
                                                                                             "BACKEND"):
                found[(host, row["pxname"], row["svname"])] = row
    return found
