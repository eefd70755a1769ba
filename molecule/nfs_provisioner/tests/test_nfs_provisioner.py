"""nfs_provisioner through k8s_manifests: the chart's objects rendered from its values, apply SKIPPED
without a kubeconfig, chart values honoured, bad values refused before anything is written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

COMPONENT = "nfs-provisioner"


def _dest() -> Path:
    return Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "ufc" / "manifests" / "molecule" / COMPONENT


def _objects(directory: Path) -> dict[tuple[str, str], dict]:
    found = {}
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict]:
    return _objects(_dest())


def test_the_chart_objects_are_written(objects):
    assert sorted(objects) == [
        ("ClusterRole", "nfs-subdir-external-provisioner-runner"),
        ("ClusterRoleBinding", "run-nfs-subdir-external-provisioner"),
        ("Deployment", "nfs-subdir-external-provisioner"),
        ("Namespace", "nfs-system"),
        ("PersistentVolume", "pv-nfs-subdir-external-provisioner"),
        ("PersistentVolumeClaim", "pvc-nfs-subdir-external-provisioner"),
        ("Role", "leader-locking-nfs-subdir-external-provisioner"),
        ("RoleBinding", "leader-locking-nfs-subdir-external-provisioner"),
        ("ServiceAccount", "nfs-subdir-external-provisioner"),
        ("StorageClass", "nfs-sc"),
    ]


def test_storage_class_carries_the_seed_values(objects):
    sc = objects[("StorageClass", "nfs-sc")]
    assert sc["provisioner"] == "cluster.local/nfs-subdir-external-provisioner"
    assert sc["parameters"] == {"archiveOnDelete": "true"}
    assert sc["mountOptions"] == ["nfsvers=4.1"]
    assert sc["allowVolumeExpansion"] is False
    assert "annotations" not in sc["metadata"]  # defaultClass false, as in the seed


def test_deployment_points_at_the_nfs_server_host(objects):
    pod = objects[("Deployment", "nfs-subdir-external-provisioner")]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {
        "PROVISIONER_NAME": "cluster.local/nfs-subdir-external-provisioner",
        "NFS_SERVER": "10.0.0.30",
        "NFS_PATH": "/data",
    }
    assert container["image"] == "registry.k8s.io/sig-storage/nfs-subdir-external-provisioner:v4.0.2"
    # mount options given: the root is mounted through the PVC that carries them
    assert pod["volumes"] == [
        {
            "name": "nfs-subdir-external-provisioner-root",
            "persistentVolumeClaim": {"claimName": "pvc-nfs-subdir-external-provisioner"},
        }
    ]


def test_apply_is_reported_skipped_and_values_follow_the_chart(run_playbook, tmp_path):
    values = {
        "nfs_provisioner_nfs_mount_options": [],
        "nfs_provisioner_storage_class_name": "shared",
        "nfs_provisioner_storage_class_archive_on_delete": False,
        "nfs_provisioner_storage_class_on_delete": "retain",
        "nfs_provisioner_storage_class_path_pattern": "${.PVC.namespace}/${.PVC.name}",
        "nfs_provisioner_leader_election_enabled": False,
        "nfs_provisioner_pod_disruption_budget_enabled": True,
        "k8s_manifests_state_dir": str(tmp_path),
    }
    run = run_playbook(extra_vars=values)
    assert run.rc == 0, run.output[-3000:]
    assert "nfs-provisioner: apply SKIPPED" in run.text
    objects = _objects(tmp_path / "manifests" / "molecule" / COMPONENT)
    sc = objects[("StorageClass", "shared")]
    assert sc["parameters"] == {
        "archiveOnDelete": "false",
        "onDelete": "retain",
        "pathPattern": "${.PVC.namespace}/${.PVC.name}",
    }
    assert (
        "mountOptions" not in sc and ("PersistentVolume", "pv-nfs-subdir-external-provisioner") not in objects
    )
    pod = objects[("Deployment", "nfs-subdir-external-provisioner")]["spec"]["template"]["spec"]
    assert pod["volumes"][0]["nfs"] == {"server": "10.0.0.30", "path": "/data"}
    assert {"name": "ENABLE_LEADER_ELECTION", "value": "false"} in pod["containers"][0]["env"]
    assert objects[("PodDisruptionBudget", "nfs-subdir-external-provisioner")]["spec"]["maxUnavailable"] == 1


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        ({"nfs_provisioner_storage_class_on_delete": "archive"}, 'onDelete "archive"'),
        ({"nfs_provisioner_nfs_path": "data"}, "nfs.path data (absolute)"),
        ({"nfs_provisioner_security_context": {"runAsUser": "root"}}, "Deployment/nfs-system/nfs-subdir"),
    ],
    ids=["bad-on-delete", "relative-path", "schema-violation"],
)
def test_bad_values_are_refused_before_anything_is_written(run_playbook, tmp_path, values, fragment):
    run = run_playbook(extra_vars={**values, "k8s_manifests_state_dir": str(tmp_path)})
    assert run.rc != 0
    assert fragment in run.text, run.text[-2000:]
    assert not list(tmp_path.rglob("*.yaml"))
