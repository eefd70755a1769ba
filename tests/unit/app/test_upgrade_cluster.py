"""`ufcctl upgrade-cluster`'s refusals before anything is read from the cluster or touched: a version
that is not one, and a version the inventory does not record (a later deploy would undo it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from ufcctl.app import upgrade_cluster, upgrade_plan
from ufcctl.errors import InputError


@pytest.fixture()
def inventory(tmp_path: Path) -> Path:
    return write_cluster_inventory(tmp_path / "inv", ClusterShape(npu_nodes=4))


def _set_version(inventory: Path, version: str) -> None:
    path = inventory / "group_vars" / "all.yml"
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "ufc_kube_version": version}))


@pytest.mark.parametrize("version", ["1.35", "latest", "v1.35.x"])
def test_a_version_that_is_not_one_is_refused(inventory: Path, version: str) -> None:
    with pytest.raises(InputError, match="not a Kubernetes version"):
        upgrade_cluster.check_request(inventory, version)


def test_a_version_the_inventory_does_not_record_is_refused(inventory: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[str] = []
    monkeypatch.setattr(upgrade_cluster, "plan_upgrade_cluster", lambda *a: called.append("plan"))
    with pytest.raises(InputError) as refused:
        upgrade_cluster.check_request(inventory, "v1.35.4")
    assert "says ufc_kube_version '1.34.4'" in str(refused.value)
    assert 'set ufc_kube_version: "1.35.4"' in str(refused.value.hint)
    assert called == []  # refused before the cluster is asked anything


def test_the_recorded_version_goes_on_to_the_skew_check(inventory: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _set_version(inventory, "1.35.4")

    def plan(inventory_dir: Path, version: str, inventory: object = None) -> None:
        raise InputError("no Kubernetes CA on this machine")  # what the real plan says here

    monkeypatch.setattr(upgrade_cluster, "plan_upgrade_cluster", plan)
    with pytest.raises(InputError, match="no Kubernetes CA"):
        upgrade_cluster.check_request(inventory, "v1.35.4")
    assert upgrade_cluster.inventory_version(upgrade_cluster.load_inventory(inventory)) == "1.35.4"


@pytest.mark.parametrize(("running", "refused"), [
    ({"cp1": "v1.34.4"}, False),
    ({"cp1": "v1.34.4", "cp2": None}, False),  # one apiserver down: a deploy that repairs goes on
    ({"cp1": "v1.34.3"}, True),  # a patch change too: the kubelet would be swapped without a restart
    ({"cp1": "v1.33.9"}, True),
])
def test_deploy_refuses_a_kubernetes_version_change(inventory: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    running: dict, refused: bool) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("x")
    monkeypatch.setattr(upgrade_plan, "cluster_ca", lambda inventory: ca)
    monkeypatch.setattr(upgrade_plan, "apiserver_versions", lambda inventory, hosts: running)
    loaded = upgrade_cluster.load_inventory(inventory)
    if not refused:
        upgrade_plan.refuse_version_change(inventory, loaded)
        return
    with pytest.raises(InputError) as error:
        upgrade_plan.refuse_version_change(inventory, loaded)
    assert "says ufc_kube_version '1.34.4'" in str(error.value) and "cp1 runs" in str(error.value)
    assert "ufcctl upgrade-cluster" in str(error.value.hint)


def test_a_cluster_not_deployed_yet_is_not_asked(inventory: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upgrade_plan, "cluster_ca", lambda inventory: tmp_path / "missing.crt")
    monkeypatch.setattr(upgrade_plan, "apiserver_versions", lambda *a: pytest.fail("asked"))
    upgrade_plan.refuse_version_change(inventory, upgrade_cluster.load_inventory(inventory))


def test_the_roles_default_kube_version_is_the_pinned_release(tmp_path: Path) -> None:
    """1.34.4: the newest release MindCluster 26.0.0's statement (1.17-1.34) accepts
    (docs/reference/real-kubernetes.md §2); ufcctl's fallback and every role's default say the same."""
    assert upgrade_plan.DEFAULT_KUBE_VERSION == "1.34.4"
    bare = write_cluster_inventory(tmp_path / "bare", ClusterShape(npu_nodes=1))
    path = bare / "group_vars" / "all.yml"
    path.write_text(yaml.safe_dump({k: v for k, v in yaml.safe_load(path.read_text()).items()
                                    if k != "ufc_kube_version"}))
    assert upgrade_cluster.inventory_version(upgrade_cluster.load_inventory(bare)) == "1.34.4"
    sample = yaml.safe_load(Path("inventories/sample/group_vars/all/versions.yml").read_text())
    assert sample["ufc_kube_version"] == "1.34.4"
    for role, variable in [("kube_control_plane", "kube_control_plane_kubernetes_version"),
                           ("kube_node", "kube_node_kubernetes_version"),
                           ("k8s_manifests", "k8s_manifests_kube_version"),
                           ("ascend_components", "ascend_components_kube_version")]:
        defaults = yaml.safe_load(Path(f"roles/{role}/defaults/main.yml").read_text())
        assert defaults[variable] == "{{ ufc_kube_version | default('1.34.4') }}", role


@pytest.mark.parametrize(("target", "mindcluster", "warned"), [
    ("v1.35.4", None, True),  # the lab's upgrade target: newer than MindCluster 26.0.0 states
    ("v1.34.5", None, False),
    ("v1.35.4", "6.0.0", False),  # not in the table: the role refuses it, the plan says nothing more
])
def test_the_plan_warns_when_the_target_is_newer_than_mindcluster_states(
        inventory: Path, monkeypatch: pytest.MonkeyPatch, target: str, mindcluster: str | None,
        warned: bool) -> None:
    if mindcluster:
        path = inventory / "group_vars" / "all.yml"
        values = {**yaml.safe_load(path.read_text()), "ufc_mindcluster_version": mindcluster}
        path.write_text(yaml.safe_dump(values))
    monkeypatch.setattr(upgrade_plan, "apiserver_versions",
                        lambda inventory, hosts: dict.fromkeys(hosts, "v1.34.4"))
    monkeypatch.setattr(upgrade_plan, "_kubelet_versions", lambda: ({"w1": "v1.34.4"}, "kubeconfig"))
    monkeypatch.setattr(upgrade_plan, "etcd_status", lambda *a, **k: [])
    plan = upgrade_plan.plan_upgrade_cluster(inventory, target)
    assert plan.verdict.allowed, plan.verdict.refusals
    mindcluster_warnings = [w for w in plan.verdict.warnings if "MindCluster" in w]
    if warned:
        assert mindcluster_warnings == [
            f"Kubernetes {target} is newer than 1.34, the newest MindCluster 26.0.0 states support for (its "
            "release notes, docs/reference/ascend.md §7): not refused, but Huawei has not validated "
            "MindCluster on it; look for a MindCluster release that states it before relying on it"]
        assert "MindCluster" in str(plan.to_json()["warnings"])
    else:
        assert mindcluster_warnings == []
