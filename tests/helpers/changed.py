"""The middle test lane: which molecule scenarios and lab test modules a change needs, as pytest ids.

`python -m tests.helpers.changed` prints one pytest node id or path a line (`scripts/test.sh
--changed` runs them with the unit lane); `python -m tests.helpers.changed PATH...` shows what these
paths would select. The change is everything since the merge base with origin/main (else with a
local main behind HEAD, else since HEAD~1): commits, uncommitted edits and untracked files.

Mapping (first matching rule wins; a path no rule names needs the unit lane only: docs, README,
tests/unit, scripts):
- roles/<role>/** -> that role's molecule scenario (or the shared one, test_molecule.SHARED); a
  plugin-only role (ufc_common) -> the scenario of every role that lists it in meta/main.yml; a
  ufcctl/ file that a role's module_utils/ links to counts as that module_utils file too.
- molecule/<scenario>/** -> that scenario; other files of molecule/ (conftest.py) -> every scenario.
- ufcctl/lab/** -> test_lab.py; ufcctl/rollout/** and domain/rollout/** -> the driver and worker
  labs; etcd code -> test_etcd_lab.py; monitoring/health -> test_monitoring_lab.py; images ->
  test_images_lab.py; domain/inventory/** -> test_inventory_differential.py; certificates
  (domain/certs, app/certs.py, playbooks/certs-check.yml) -> test_certs_lab.py.
- playbooks/**, ufcctl/engine/**, ufcctl/app/** and the rest of ufcctl/domain/** ->
  test_deploy_lab.py (a deploy of the shared lab: its setup alone takes about 9 min here).
  ufcctl/cli/** and ufcctl/report/** -> unit lane only (their tests are CliRunner unit tests).
- tests/integration/<module>.py -> that module; their conftest.py, tests/helpers/lab.py and the README's
  main job (scripts/run.sh, scripts/setup.sh) -> every module of the shared lab
  (tests/helpers/lab.STACK_MODULES); pyproject.toml -> test_wheel_install.py; tests/lab_standins/<x>/**
  -> the lab modules that run that stand-in.
"""

from __future__ import annotations

import fnmatch
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from tests.helpers.lab import STACK_MODULES
from tests.integration.test_molecule import LAB_TESTED, PLUGIN_ONLY, SCENARIOS, SHARED

ROOT = Path(__file__).resolve().parents[2]
INTEGRATION = "tests/integration"
MOLECULE_TEST = f"{INTEGRATION}/test_molecule.py::test_molecule_scenario"
STACK = "stack"  # stands for every module of the shared lab

# (path pattern, integration modules); fnmatch's * crosses "/", so "ufcctl/lab/*" is the whole tree.
RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    # node removal and reset: their own stack module (before the broader rules below: first match wins)
    ("ufcctl/rollout/kinds/remove_nodes.py", ("test_workers_remove_lab.py",)),
    ("ufcctl/app/reset.py", ("test_workers_remove_lab.py",)),
    ("playbooks/remove-nodes.yml", ("test_workers_remove_lab.py",)),
    ("playbooks/reset.yml", ("test_workers_remove_lab.py",)),
    ("roles/kube_node/tasks/remove.yml", ("test_workers_remove_lab.py",)),
    ("roles/kube_node/tasks/reset.yml", ("test_workers_remove_lab.py", "test_workers_remove_cp_lab.py")),
    ("roles/kube_node/library/*", ("test_workers_remove_lab.py",)),
    ("roles/k8s_manifests/tasks/drain.yml", ("test_workers_remove_lab.py",)),
    ("roles/k8s_manifests/tasks/delete_node.yml", ("test_workers_remove_lab.py",)),
    ("roles/etcd/tasks/reset.yml", ("test_workers_remove_lab.py", "test_workers_remove_cp_lab.py")),
    ("ufcctl/rollout/kinds/remove_control_plane.py", ("test_workers_remove_cp_lab.py",)),
    ("playbooks/remove-control-plane.yml", ("test_workers_remove_cp_lab.py",)),
    ("roles/kube_control_plane/tasks/remove.yml", ("test_workers_remove_cp_lab.py",)),
    ("roles/apiserver_lb/tasks/leave.yml", ("test_workers_remove_cp_lab.py",)),
    ("roles/etcd/tasks/leave.yml", ("test_workers_remove_cp_lab.py",)),
    ("ufcctl/nodeside/etcd_join.py", ("test_workers_remove_cp_lab.py", "test_etcd_lab.py")),
    ("ufcctl/rollout/kinds/upgrade_cluster.py", ("test_workers_upgrade_lab.py",)),
    ("ufcctl/app/upgrade_cluster.py", ("test_workers_upgrade_lab.py",)),
    ("ufcctl/cli/upgrade.py", ("test_workers_upgrade_lab.py",)),
    ("playbooks/upgrade-cluster.yml", ("test_workers_upgrade_lab.py",)),
    ("playbooks/upgrade-nodes.yml", ("test_workers_upgrade_lab.py",)),
    ("roles/kube_node/tasks/upgrade.yml", ("test_workers_upgrade_lab.py",)),
    ("roles/kube_node/tasks/binaries.yml", ("test_workers_upgrade_lab.py",)),
    ("roles/kube_control_plane/tasks/upgrade.yml", ("test_workers_upgrade_lab.py",)),
    ("roles/apiserver_lb/tasks/backend.yml", ("test_workers_upgrade_lab.py",
                                              "test_workers_remove_cp_lab.py")),
    ("roles/k8s_manifests/tasks/release.yml", ("test_workers_upgrade_lab.py",)),
    ("ufcctl/cli/*", ()),
    ("ufcctl/report/*", ()),
    ("ufcctl/lab/*", ("test_lab.py",)),
    ("ufcctl/rollout/*", ("test_upgrade_drivers_lab.py", "test_workers_lab.py")),
    ("ufcctl/domain/rollout/*", ("test_upgrade_drivers_lab.py", "test_workers_lab.py")),
    ("ufcctl/app/etcd_maint.py", ("test_etcd_lab.py",)),
    ("ufcctl/engine/etcd_targets.py", ("test_etcd_lab.py", "test_workers_remove_cp_lab.py")),
    ("ufcctl/domain/etcd/*", ("test_etcd_lab.py",)),
    ("ufcctl/engine/etcd_*", ("test_etcd_lab.py",)),
    ("ufcctl/nodeside/*", ("test_etcd_lab.py",)),
    ("ufcctl/app/health.py", ("test_monitoring_lab.py",)),
    ("ufcctl/domain/monitoring/*", ("test_monitoring_lab.py",)),
    ("ufcctl/engine/victoria.py", ("test_monitoring_lab.py",)),
    ("ufcctl/domain/images/*", ("test_images_lab.py",)),
    ("ufcctl/engine/registry_client.py", ("test_images_lab.py",)),
    ("ufcctl/domain/inventory/*", ("test_inventory_differential.py",)),
    ("ufcctl/domain/certs/*", ("test_certs_lab.py",)),
    ("ufcctl/app/certs.py", ("test_certs_lab.py",)),
    ("playbooks/certs-check.yml", ("test_certs_lab.py",)),
    ("playbooks/*", ("test_deploy_lab.py",)),
    ("ufcctl/*", ("test_deploy_lab.py",)),
    ("tests/integration/conftest.py", (STACK,)),
    ("tests/helpers/lab.py", (STACK,)),
    ("pyproject.toml", ("test_wheel_install.py",)),
    # the README's main job makes the shared lab (tests/helpers/lab.py): a change to it is a change to all
    ("scripts/run.sh", (STACK,)),
    ("scripts/setup.sh", (STACK,)),
    # the lab stand-ins, each with the lab modules that run it
    ("tests/lab_standins/npu_emulator/*", ("test_upgrade_drivers_lab.py", "test_lab.py")),
    ("tests/lab_standins/kube_emulator/*", ("test_workers_lab.py", "test_deploy_lab.py",
                                             "test_workers_remove_lab.py")),
    ("tests/lab_standins/upstream_registry/*", ("test_images_lab.py",)),
    ("tests/lab_standins/apiserver_standin/*", ("test_vip_failover.py",)),
)


def _role_users(role: str, root: Path) -> list[str]:
    """Roles whose meta/main.yml names `role` (how a plugin-only role reaches real hosts)."""
    return sorted(
        meta.parents[1].name
        for meta in root.glob("roles/*/meta/main.yml")
        if meta.parents[1].name != role and role in meta.read_text(encoding="utf-8")
    )


def _shipped_as(path: str, root: Path) -> list[str]:
    """The roles' module_utils symlinks to this package file (the nodes run it as module_utils)."""
    target = (root / path).resolve()
    return sorted(link.relative_to(root).as_posix() for link in root.glob("roles/*/module_utils/*.py")
                  if link.is_symlink() and link.resolve() == target)


def _roles_reached(path: str, root: Path) -> set[str]:
    """The roles a path is part of: its role, a plugin-only role's users, a shipped module's roles."""
    parts = path.split("/")
    if parts[0] == "ufcctl":
        return {r for link in _shipped_as(path, root) for r in _roles_reached(link, root)}
    if parts[0] == "roles" and len(parts) > 2:
        return set(_role_users(parts[1], root)) if parts[1] in PLUGIN_ONLY else {parts[1]}
    return set()


def _scenarios(path: str, roles: set[str]) -> set[str]:
    parts = path.split("/")
    if parts[0] == "molecule" and len(parts) > 1:
        return {parts[1]} if parts[1] in SCENARIOS else set(SCENARIOS)
    return {SHARED.get(r, r) for r in roles} & set(SCENARIOS)


def _lab_tested(roles: set[str]) -> set[str]:
    """The lab modules of the roles the shared lab checks instead of a scenario."""
    return {Path(LAB_TESTED[r]).name for r in roles if r in LAB_TESTED}


def _modules(path: str) -> set[str]:
    parts = path.split("/")
    if path.startswith(f"{INTEGRATION}/") and len(parts) == 3 and fnmatch.fnmatch(parts[2], "test_*.py"):
        return {parts[2]}
    for pattern, modules in RULES:
        if fnmatch.fnmatch(path, pattern):
            return set(STACK_MODULES) if STACK in modules else set(modules)
    return set()


def select(paths: Iterable[str], root: Path = ROOT) -> list[str]:
    """Pytest ids for these changed paths (relative, "/"-separated): scenarios first, then modules."""
    scenarios: set[str] = set()
    modules: set[str] = set()
    for path in paths:
        roles = _roles_reached(path, root)
        scenarios |= _scenarios(path, roles)
        modules |= _modules(path) | _lab_tested(roles)
    modules.discard("test_molecule.py")  # its scenarios are chosen one by one above
    return [f"{MOLECULE_TEST}[{s}]" for s in sorted(scenarios)] + [
        f"{INTEGRATION}/{m}" for m in sorted(modules)]


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)


def base(root: Path = ROOT) -> str:
    """Where the change starts: the merge base with origin/main, else with a local main that HEAD has
    moved past (a branch or worktree), else HEAD~1, else HEAD (a repository's first commit)."""
    head = _git(root, "rev-parse", "HEAD").stdout.strip()
    for args in (("merge-base", "HEAD", "origin/main"), ("merge-base", "HEAD", "main"),
                 ("rev-parse", "--verify", "-q", "HEAD~1")):
        result = _git(root, *args)
        found = result.stdout.strip() if result.returncode == 0 else ""
        # a local main at HEAD is where we stand, not a base: fall through to HEAD~1
        if found and (found != head or args[-1] == "origin/main"):
            return found
    return "HEAD"


def changed_paths(root: Path = ROOT) -> list[str]:
    """Committed since `base`, staged, unstaged (renames as both names) and untracked files."""
    diff = _git(root, "diff", "--name-only", "--no-renames", base(root))
    untracked = _git(root, "ls-files", "--others", "--exclude-standard")
    for result in (diff, untracked):
        if result.returncode != 0:
            raise SystemExit(f"git failed in {root}: {result.stderr.strip()}")
    return sorted({line for result in (diff, untracked) for line in result.stdout.splitlines() if line})


def main(argv: Sequence[str] = ()) -> int:
    """Print the ids for the given paths, or for the working tree's change when none are given."""
    for node in select(argv or changed_paths()):
        print(node)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
