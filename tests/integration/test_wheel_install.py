"""ufcctl as a platform team installs it: `pip install` of the wheel (not editable) into a fresh venv,
then used from a directory that has nothing to do with this checkout.

The wheel must carry the roles, playbooks, ansible.cfg, the sample inventory and the lab's image
recipe (pyproject.toml `force-include`, ufcctl/paths.py). The test scaffolds an inventory with
`ufcctl init`, checks it, brings up a one-worker lab with the installed ufcctl and runs
`deploy --check` on it: the installed tool finds everything it ships, and writes state only in the
working directory. Only the test's own lab (its own podman network and subnet) is contacted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
LAB = "itwheel"
SUBNET = "10.89.73.0/24"  # a test-owned podman network; nothing else is ever targeted
# A wheel carries no lab NPU emulator, so nothing serves what a deploy downloads: `lab up` refuses that
# unless told the lab is for check mode only, which is all this test runs on it (deploy --check on the
# preflight and node_tuning tags, which download nothing). tests/unit/lab/test_lab_up_install.py runs
# these arguments against an install without the emulator.
LAB_UP_ARGS = ["lab", "up", "--nodes", "1", "--subnet", SUBNET, "--allow-no-mirror"]
Site = tuple[Path, dict[str, str]]  # an unrelated working directory and the installed ufcctl's environment


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None,
         timeout: int = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel built from this checkout; returns its bin directory."""
    work = tmp_path_factory.mktemp("wheel")
    dist = work / "dist"
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
                 cwd=work)
    assert built.returncode == 0, built.stdout + built.stderr
    wheels = list(dist.glob("ufcctl-*.whl"))
    assert len(wheels) == 1, wheels
    venv = work / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], cwd=work)
    assert made.returncode == 0, made.stderr
    # --no-compile: no .pyc for the ~4,000 modules of ansible-core and the rest up front (Python writes
    # those it imports when it imports them); what is installed is the same
    pip = _run([str(venv / "bin" / "pip"), "install", "-q", "--no-compile", str(wheels[0])], cwd=work)
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    return venv / "bin"


@pytest.fixture(scope="module")
def site(installed: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """An unrelated working directory and the environment of the installed ufcctl (no checkout on PATH)."""
    where = tmp_path_factory.mktemp("platform-repo")
    env = {k: v for k, v in os.environ.items()
           if k not in ("UFC_STATE_DIR", "UFC_LAB_INVENTORY", "CONTAINERS_CONF", "PYTHONPATH", "VIRTUAL_ENV")}
    system_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    env.update({"PATH": f"{installed}{os.pathsep}{system_path}", "UFC_LAB_NAME": LAB})
    yield where, env
    _run([str(installed / "ufcctl"), "lab", "down"], cwd=where, env=env)


def test_the_installed_package_is_not_this_checkout(installed: Path, site: Site) -> None:
    where, env = site
    proc = _run([str(installed / "python"), "-c", "import ufcctl, ufcctl.paths as p; "
                 "print(ufcctl.__file__); print(p.SHARE); print(p.CHECKOUT)"], cwd=where, env=env)
    assert proc.returncode == 0, proc.stderr
    package, share, checkout = proc.stdout.split()
    assert str(ROOT) not in package and share.endswith("ufcctl/share") and checkout == "None"
    check = _run([str(installed / "pip"), "check"], cwd=where, env=env)
    assert check.returncode == 0, check.stdout + check.stderr


def test_init_then_inventory_check_from_an_unrelated_directory(
        installed: Path, site: Site) -> None:
    where, env = site
    ufcctl = str(installed / "ufcctl")
    proc = _run([ufcctl, "init", "demo"], cwd=where, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (where / "inventories" / "demo" / "hosts.yml").is_file()
    again = _run([ufcctl, "init", "demo"], cwd=where, env=env)
    assert again.returncode == 2 and "already exists" in again.stderr
    check = _run([ufcctl, "inventory", "check", "--inventory", "demo"], cwd=where, env=env)
    assert check.returncode == 0, check.stdout + check.stderr


def test_deploy_check_with_the_shipped_roles_on_a_lab(installed: Path, site: Site) -> None:
    where, env = site
    ufcctl = str(installed / "ufcctl")
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    up = _run([ufcctl, *LAB_UP_ARGS], cwd=where, env=env)
    assert up.returncode == 0, up.stdout + up.stderr
    assert "no package mirror" in up.stderr, up.stderr  # said, not silent
    inventory = f"lab-{LAB}"
    assert (where / "inventories" / inventory / "hosts.yml").is_file()
    proc = _run([ufcctl, "deploy", "--inventory", inventory, "--check", "--tags", "preflight,node_tuning",
                 "--output", "json"], cwd=where, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # the cluster phase on the 3 control planes; --tags select cluster-phase tasks, so no node phase
    everything = json.loads(proc.stdout)
    data = everything["cluster"]
    assert data["check"] is True and len(data["hosts"]) == 3 and everything["nodes"] is None
    assert all(h["ok"] > 0 and h["failed"] == 0 for h in data["hosts"].values()), data["hosts"]
    # state lives in the working directory, private
    runs = where / ".ufc" / "runs"
    assert (runs / data["run_id"] / "summary.json").is_file()
    assert (where / ".ufc").stat().st_mode & 0o777 == 0o700
    assert not (ROOT / ".ufc" / "runs" / data["run_id"]).exists()
