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


@pytest.mark.parametrize("version", ["1.32", "latest", "v1.32.x"])
def test_a_version_that_is_not_one_is_refused(inventory: Path, version: str) -> None:
    with pytest.raises(InputError, match="not a Kubernetes version"):
        upgrade_cluster.check_request(inventory, version)


def test_a_version_the_inventory_does_not_record_is_refused(inventory: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[str] = []
    monkeypatch.setattr(upgrade_cluster, "plan_upgrade_cluster", lambda *a: called.append("plan"))
    with pytest.raises(InputError) as refused:
        upgrade_cluster.check_request(inventory, "v1.32.3")
    assert "says ufc_kube_version '1.31.4'" in str(refused.value)
    assert 'set ufc_kube_version: "1.32.3"' in str(refused.value.hint)
    assert called == []  # refused before the cluster is asked anything


def test_the_recorded_version_goes_on_to_the_skew_check(inventory: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _set_version(inventory, "1.32.3")

    def plan(inventory_dir: Path, version: str, inventory: object = None) -> None:
        raise InputError("no Kubernetes CA on this machine")  # what the real plan says here

    monkeypatch.setattr(upgrade_cluster, "plan_upgrade_cluster", plan)
    with pytest.raises(InputError, match="no Kubernetes CA"):
        upgrade_cluster.check_request(inventory, "v1.32.3")
    assert upgrade_cluster.inventory_version(upgrade_cluster.load_inventory(inventory)) == "1.32.3"


@pytest.mark.parametrize(("running", "refused"), [
    ({"cp1": "v1.31.4"}, False),
    ({"cp1": "v1.31.4", "cp2": None}, False),  # one apiserver down: a deploy that repairs goes on
    ({"cp1": "v1.31.3"}, True),  # a patch change too: the kubelet would be swapped without a restart
    ({"cp1": "v1.30.9"}, True),
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
    assert "says ufc_kube_version '1.31.4'" in str(error.value) and "cp1 runs" in str(error.value)
    assert "ufcctl upgrade-cluster" in str(error.value.hint)


def test_a_cluster_not_deployed_yet_is_not_asked(inventory: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upgrade_plan, "cluster_ca", lambda inventory: tmp_path / "missing.crt")
    monkeypatch.setattr(upgrade_plan, "apiserver_versions", lambda *a: pytest.fail("asked"))
    upgrade_plan.refuse_version_change(inventory, upgrade_cluster.load_inventory(inventory))
