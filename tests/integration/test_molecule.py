"""Every role's molecule scenario (create, converge, verify, destroy) on the lab image.

Idempotence (a second converge changes nothing) is checked once per role, on a lab that runs the role
the way a deploy does, not again in molecule (one converge less per scenario: the CI-time lever of
issue 25); IDEMPOTENCE_ON_LAB names the lab test of each scenario, and tests/unit/test_test_layout.py
fails when a scenario drops its idempotence step without one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))
IMAGE = "localhost/ufcctl-node:bookworm"
# Roles covered by a shared scenario instead of their own (controller-side roles: one scenario
# per role took ~3 min each on this machine).
ADDONS = ("k8s_manifests", "cni", "nodelocaldns", "volcano", "ascend_components")
# kube_node's joins: tests/integration/test_workers_lab.py
SHARED = {**{role: "k8s_addons" for role in ADDONS}, "kube_node": "container_runtime"}
# Roles the shared lab deploys and checks instead of a scenario of their own (a second deploy of the same
# role, retired for CI time: molecule etcd, monitoring and apiserver_lb took ~9, ~6 and ~4 of CI's
# minutes); each names
# the lab module that checks what its scenario did.
LAB_TESTED = {"etcd": "tests/integration/test_etcd_lab.py",
              "apiserver_lb": "tests/integration/test_vip_failover.py",
              "monitoring": "tests/integration/test_monitoring_lab.py",
              "monitoring_agent": "tests/integration/test_monitoring_lab.py"}
# Roles with plugins and no tasks: run on real hosts by the scenario of every role that lists them
# in meta/main.yml, and unit-tested against a real module run.
PLUGIN_ONLY = {"ufc_common": "tests/unit/roles/test_ufc_common_files.py"}

pytestmark = pytest.mark.integration

_DEPLOY_TWICE = "tests/integration/test_deploy_lab.py::test_deploy_is_green_then_idempotent"
# scenario -> the lab test whose second run of the role must change nothing (deploy: both phases, every
# host, then check mode; preheat: a second preheat; drivers: a second upgrade-drivers run)
IDEMPOTENCE_ON_LAB: dict[str, str] = {
    # (k8s_addons and kube_control_plane keep theirs: their verify reads the idempotence run's log)
    **{s: _DEPLOY_TWICE for s in ("container_runtime", "nfs_provisioner", "nfs_server", "node_tuning",
                                  "preflight", "registry_cache")},
    "image_preheat": "tests/integration/test_images_lab.py::"
                     "test_a_second_preheat_changes_nothing_and_fetches_nothing_upstream",
    "ascend_driver": "tests/integration/test_upgrade_drivers_lab.py::"
                     "test_full_install_then_a_second_run_changes_nothing",
}

# Scenarios of roles whose issues are still open, skipped with the reason (never reported as passed).
PENDING: dict[str, str] = {}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["CONTAINERS_CONF"] = str(ROOT / "ufcctl" / "lab" / "containers.conf")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("ANSIBLE_FORCE_COLOR", "0")
    return env


@pytest.fixture(scope="module", autouse=True)
def _image_present() -> None:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    probe = subprocess.run(["podman", "image", "exists", IMAGE], env=_env(), check=False)
    assert probe.returncode == 0, f"{IMAGE} missing: run `ufcctl lab image` first (scripts/test.sh does)"


def test_every_role_has_a_scenario() -> None:
    roles = sorted(p.name for p in (ROOT / "roles").iterdir() if p.is_dir())
    assert roles, "no roles found"
    assert sorted({SHARED.get(role, role) for role in roles} - set(SCENARIOS) - set(PLUGIN_ONLY)
                  - set(LAB_TESTED)) == []
    for role, module in LAB_TESTED.items():
        assert role not in SCENARIOS, f"{role} has a scenario again: drop it from LAB_TESTED"
        assert (ROOT / module).is_file(), module
    for role, tests in PLUGIN_ONLY.items():
        assert not (ROOT / "roles" / role / "tasks").exists(), f"{role} has tasks now: give it a scenario"
        assert (ROOT / tests).is_file(), tests


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario: str) -> None:
    if scenario in PENDING:
        pytest.skip(PENDING[scenario])
    proc = subprocess.run(  # the timeout is a hang guard, not a speed test
        [str(Path(sys.executable).parent / "molecule"), "test", "-s", scenario],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=2400, check=False,
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-80:])
        pytest.fail(f"molecule test -s {scenario} failed (rc={proc.returncode}):\n{tail}")
