"""`scripts/test.sh --changed`: the molecule scenarios and lab test modules that changed paths select."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import changed
from tests.helpers.lab import STACK_MODULES


def scenario(name: str) -> str:
    return f"tests/integration/test_molecule.py::test_molecule_scenario[{name}]"


def module(name: str) -> str:
    return f"tests/integration/{name}"


STACK = [module(m) for m in sorted(STACK_MODULES)]
ROLLOUT_LABS = [module("test_upgrade_drivers_lab.py"), module("test_workers_lab.py")]
# kube_node and monitoring_agent: shared scenarios
UFC_COMMON_USERS = ["ascend_driver", "container_runtime", "image_preheat", "kube_control_plane", "nfs_server",
                    "node_tuning", "preflight", "registry_cache"]
# ...and the roles the shared lab checks instead of a scenario (test_molecule.LAB_TESTED)
UFC_COMMON_LABS = [module(m) for m in ("test_etcd_lab.py", "test_monitoring_lab.py", "test_vip_failover.py")]

CASES = [
    (["README.md", "docs/architecture.md", "tests/unit/report/test_width80.py"], []),
    (["ufcctl/cli/health.py", "ufcctl/report/tables.py"], []),
    (["roles/etcd/tasks/main.yml"], [module("test_etcd_lab.py")]),
    (["roles/apiserver_lb/templates/haproxy.cfg.j2"], [module("test_vip_failover.py")]),
    (["roles/cni/templates/calico.yaml.j2", "roles/volcano/defaults/main.yml"], [scenario("k8s_addons")]),
    (["roles/kube_node/tasks/join.yml"], [scenario("container_runtime")]),
    (["roles/monitoring_agent/tasks/main.yml"], [module("test_monitoring_lab.py")]),
    (["roles/ufc_common/plugins/filter/ufc.py"], [scenario(s) for s in UFC_COMMON_USERS] + UFC_COMMON_LABS),
    (["molecule/nfs_server/verify.yml"], [scenario("nfs_server")]),
    (["ufcctl/domain/images/manifest.py"],  # shipped to nodes as roles/ufc_common/module_utils/
     [scenario(s) for s in UFC_COMMON_USERS] + [UFC_COMMON_LABS[0], module("test_images_lab.py"),
                                                  *UFC_COMMON_LABS[1:]]),
    (["molecule/conftest.py"], [scenario(s) for s in changed.SCENARIOS]),
    (["ufcctl/lab/podman.py"], [module("test_lab.py")]),
    (["ufcctl/rollout/executor.py"], ROLLOUT_LABS),
    (["ufcctl/domain/rollout/plan.py"], ROLLOUT_LABS),
    (["ufcctl/nodeside/etcd_agent.py", "ufcctl/app/etcd_maint.py"], [module("test_etcd_lab.py")]),
    (["ufcctl/domain/monitoring/health.py"], [module("test_monitoring_lab.py")]),
    (["ufcctl/domain/inventory/ranges.py"], [module("test_inventory_differential.py")]),
    (["playbooks/cluster.yml"], [module("test_deploy_lab.py")]),
    (["ufcctl/engine/runner.py"], [module("test_deploy_lab.py")]),
    (["tests/integration/test_nfs_lab.py"], [module("test_nfs_lab.py")]),
    (["tests/integration/conftest.py"], STACK),
    (["pyproject.toml"], [module("test_wheel_install.py")]),
    (["scripts/run.sh"], STACK),
    (["scripts/test.sh"], []),
    (["tests/lab_standins/upstream_registry/push.py"], [module("test_images_lab.py")]),
    (["tests/lab_standins/npu_emulator/npu_smi.py"],
     [module("test_lab.py"), module("test_upgrade_drivers_lab.py")]),
    (["roles/etcd/tasks/main.yml", "ufcctl/lab/lab.py"], [module("test_etcd_lab.py"), module("test_lab.py")]),
]


@pytest.mark.parametrize(("paths", "selected"), CASES, ids=[" ".join(paths) for paths, _ in CASES])
def test_select(paths: list[str], selected: list[str]) -> None:
    assert changed.select(paths) == selected


def test_every_selected_id_names_a_real_test() -> None:
    everything = [f"roles/{p.name}/tasks/main.yml" for p in (changed.ROOT / "roles").iterdir()]
    everything += [f"{changed.INTEGRATION}/{m}" for m in STACK_MODULES] + ["pyproject.toml", "ufcctl/lab/x"]
    for node in changed.select(everything):
        path, _, param = node.partition("::")
        assert (changed.ROOT / path).is_file(), node
        if param:
            assert param.removeprefix("test_molecule_scenario[").removesuffix("]") in changed.SCENARIOS


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


def test_change_is_commits_since_main_plus_edits_plus_untracked(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    for name in ("old.txt", "edited.txt", "renamed.txt"):
        (tmp_path / name).write_text(name)
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    _git(tmp_path, "checkout", "-qb", "topic")
    (tmp_path / "committed.txt").write_text("x")
    _git(tmp_path, "add", "committed.txt")
    _git(tmp_path, "commit", "-qm", "one")
    (tmp_path / "committed2.txt").write_text("x")
    _git(tmp_path, "add", "committed2.txt")
    _git(tmp_path, "commit", "-qm", "two")  # two commits: HEAD~1 alone would miss the first
    (tmp_path / "edited.txt").write_text("changed")
    _git(tmp_path, "mv", "renamed.txt", "moved.txt")
    (tmp_path / "new.txt").write_text("untracked")
    assert changed.changed_paths(tmp_path) == ["committed.txt", "committed2.txt", "edited.txt", "moved.txt",
                                               "new.txt", "renamed.txt"]
