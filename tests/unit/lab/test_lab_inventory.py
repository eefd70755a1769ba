"""Lab inventory rendering: groups and vars in the sample scheme, known_hosts, and Ansible's own reading."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ufcctl.lab.inventory import (
    MARKER,
    NFS_EXPORT_DIR,
    InventoryPaths,
    known_hosts_text,
    render_inventory,
)
from ufcctl.lab.layout import LabLayout, plan_layout

KEY_A = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJWGdKHEdfnQVDHELz28y7c0cT8EmKmiiUzZw8uAy8zd"


def _keys(layout: LabLayout) -> dict[str, str]:
    # A distinct fake key per host so a mix-up between hosts would show.
    return {n.name: f"ssh-ed25519 KEY{i}" for i, n in enumerate(layout.nodes)}


def _write(tmp_path: Path, workers: int = 4, lab: str = "t1", subdir: str = "inv") -> tuple[Path, LabLayout]:
    layout = plan_layout(lab, workers, "10.89.71.0/24")
    inv = tmp_path / subdir
    paths = InventoryPaths(inv, tmp_path / "state" / "id_ed25519")
    for rel, content in render_inventory(layout, paths, _keys(layout)).items():
        (inv / rel).parent.mkdir(parents=True, exist_ok=True)
        (inv / rel).write_text(content)
    return inv, layout


def _ansible_inventory(inv: Path) -> dict:
    exe = Path(sys.executable).parent / "ansible-inventory"
    proc = subprocess.run([str(exe), "-i", str(inv), "--list"], capture_output=True, text=True, check=True,
                          cwd=inv)
    return json.loads(proc.stdout)


def test_groups_follow_the_sample_scheme(tmp_path: Path) -> None:
    inv, layout = _write(tmp_path)
    doc = yaml.safe_load((inv / "hosts.yml").read_text())["all"]["children"]
    cps = ["t1-cp1", "t1-cp2", "t1-cp3"]
    assert list(doc["kube_control_plane"]["hosts"]) == cps
    assert doc["apiserver_lb"] == {"children": {"kube_control_plane": {}}}
    for group in ("etcd_core", "etcd_events", "etcd_pods"):
        assert list(doc[group]["hosts"]) == cps
    assert doc["kube_node"] == {"children": {"npu_node": {}}}
    assert list(doc["npu_node"]["hosts"]) == [n.name for n in layout.workers]
    nfs = doc["nfs_server"]["hosts"]["t1-cp1"]
    assert (nfs["ufc_lab_nfs_export_dir"], nfs["nfs_server_export_path"]) == (NFS_EXPORT_DIR, NFS_EXPORT_DIR)
    assert (nfs["nfs_server_implementation"], nfs["nfs_server_export_network"]) == ("ganesha", layout.subnet)


def test_ansible_reads_the_same_hosts_groups_and_vars(tmp_path: Path) -> None:
    inv, layout = _write(tmp_path, workers=5)
    data = _ansible_inventory(inv)
    hostvars = data["_meta"]["hostvars"]
    assert sorted(hostvars) == sorted(n.name for n in layout.nodes)
    assert sorted(data["npu_node"]["hosts"]) == [n.name for n in layout.workers]
    assert data["kube_node"]["children"] == ["npu_node"]
    assert data["apiserver_lb"]["children"] == ["kube_control_plane"]
    for node in layout.nodes:
        hv = hostvars[node.name]
        assert hv["ansible_host"] == node.ip
        assert hv["ansible_user"] == "root"
        assert hv["ufc_vip"] == layout.vip and hv["ufc_vip_interface"] == "eth0" and hv["ufc_lab"] is True
        assert hv["cni_calico_bgp_peering"] == "none"
        assert hv["ufc_arch"] == "amd64"  # x86_64 lab containers, amd64 mirror (issue 44, D12)
        assert hv["ansible_ssh_private_key_file"] == str((tmp_path / "state" / "id_ed25519").resolve())
        if node.topology is not None:
            t = node.topology
            assert (hv["npu_tor_id"], hv["npu_super_pod_id"], hv["npu_slice_id"], hv["rack"]) == (
                t.tor_id, t.super_pod_id, t.slice_id, t.rack)
            assert hv["npu_accelerator_type"] == "module-910b-8"
        else:
            assert "npu_tor_id" not in hv


def test_ssh_args_pin_known_hosts_even_with_spaces_in_the_path(tmp_path: Path) -> None:
    inv, _ = _write(tmp_path, subdir="my inventory")
    conn = yaml.safe_load((inv / "group_vars" / "all" / "connection.yml").read_text())
    args = shlex.split(conn["ansible_ssh_common_args"])
    assert args == ["-o", f"UserKnownHostsFile={(inv / 'known_hosts.txt').resolve()}",
                    "-o", "StrictHostKeyChecking=yes"]


def test_known_hosts_has_each_hosts_own_key_under_name_and_ip(tmp_path: Path) -> None:
    inv, layout = _write(tmp_path, workers=2)
    lines = (inv / "known_hosts.txt").read_text().splitlines()
    assert len(lines) == len(layout.nodes)
    for i, (line, node) in enumerate(zip(lines, layout.nodes, strict=True)):
        assert line == f"{node.name},{node.ip} ssh-ed25519 KEY{i}"


def test_known_hosts_drops_the_key_comment_and_refuses_a_missing_key() -> None:
    layout = plan_layout("t1", 1, "10.89.71.0/24")
    keys = {n.name: f"{KEY_A} root@{n.name}" for n in layout.nodes}
    assert known_hosts_text(layout, keys).splitlines()[0] == f"t1-cp1,10.89.71.11 {KEY_A}"
    del keys["t1-w01"]
    with pytest.raises(ValueError, match="t1-w01"):
        known_hosts_text(layout, keys)


def test_marker_names_the_lab(tmp_path: Path) -> None:
    inv, _ = _write(tmp_path, lab="zz9")
    assert (inv / MARKER).read_text() == "zz9\n"
    assert "lab 'zz9'" in (inv / "hosts.yml").read_text().splitlines()[0]


def test_the_lab_keeps_the_production_wait_of_the_etcd_disk_latency_alerts() -> None:
    """The lab fires alerts within seconds, except the etcd disk-latency ones: its members share one loaded
    disk, and a deploy's burst held EtcdHighCommitDurations past the main job's health window in CI."""
    from ufcctl.domain.monitoring.rules import alert_for
    from ufcctl.lab import inventory as lab_inventory

    durations = alert_for(lab_inventory.monitoring_vars()["monitoring_alert_for"])
    assert durations["EtcdHighCommitDurations"] == durations["EtcdHighFsyncDurations"] == "10m"
    assert durations["EtcdNoLeader"] == durations["EtcdMemberDown"] == "10s"


def test_the_lab_takes_quay_docker_hub_and_huaweis_images_from_its_upstream_registry(tmp_path: Path) -> None:
    """issue 44, D13: ufc_image_registries sends the add-on images the lab cannot build to the LAB UPSTREAM
    REGISTRY, through the same caches the preheat tests pull through (registry_cache_upstreams), under their
    upstream paths; registry.k8s.io's (the lab builds those: tests/lab_build) and the test images' own
    references are left as they are, so the lab pulls what it pulled before."""
    from ufcctl.app.inventory import check_inventory
    from ufcctl.domain.images import registries

    inv, layout = _write(tmp_path)
    cached = yaml.safe_load((inv / "group_vars" / "all" / "registry_cache.yml").read_text())
    upstream = cached["registry_cache_upstreams"][0]["registry"]
    assert upstream == f"{layout.npu_mirror.ip}:5000"
    mapping = cached[registries.VAR]
    assert mapping == {"quay.io": upstream, "docker.io": upstream, registries.HUAWEI: upstream}
    assert registries.mapped("quay.io/calico/node:v3.29.3", mapping) == f"{upstream}/calico/node:v3.29.3"
    assert registries.mapped(f"{registries.HUAWEI}/ascendhub/noded:v26.0.0", mapping) == \
        f"{upstream}/ascendhub/noded:v26.0.0"
    for unchanged in (f"{upstream}/lab/preheat-test:v1", "registry.k8s.io/pause:3.10.1"):
        assert registries.mapped(unchanged, mapping) == unchanged
    result = check_inventory(inv, deploy=True)
    assert not [p for p in (*result.problems, *result.warnings) if registries.VAR in str(p)], result


def test_the_lab_accepts_its_debian_npu_nodes_and_builds_no_driver_module(tmp_path: Path) -> None:
    """issue 44, D18: preflight refuses Debian 12 on NPU nodes and the driver role installs DKMS and headers
    on a kernel the driver has no modules for; the lab's NPU driver is the lab NPU emulator's."""
    from ufcctl.lab.inventory import LAB_OS, NPU_OS

    inv, _ = _write(tmp_path)
    cluster = yaml.safe_load((inv / "group_vars" / "all" / "cluster.yml").read_text())
    defaults = yaml.safe_load((Path(__file__).resolve().parents[3] / "roles" / "preflight" / "defaults"
                               / "main.yml").read_text())
    assert list(NPU_OS) == defaults["preflight_npu_distributions"]
    assert cluster["preflight_npu_distributions"] == [*NPU_OS, LAB_OS]
    assert cluster["ascend_driver_build_toolchain"] == "never"


def test_the_labs_kube_proxy_leaves_the_hosts_conntrack_table_size_alone(tmp_path: Path) -> None:
    """A lab node's netns shows nf_conntrack_max read-only: kube-proxy's KubeProxyConfiguration says
    conntrack.maxPerCore 0 there (docs/reference/real-kubernetes.md §3); the sample keeps the role's
    default, kube-proxy's own 32768 per core."""
    from tests.helpers import kcp_render

    inv, layout = _write(tmp_path, workers=1)
    cluster = yaml.safe_load((inv / "group_vars" / "all" / "cluster.yml").read_text())
    assert cluster["kube_control_plane_kube_proxy_conntrack_max_per_core"] == 0
    templar, ca = kcp_render.templar_factory(), kcp_render.ca_pem()

    def proxy(inventory: Path, host: str) -> dict:
        docs = kcp_render.render(inventory, host, templar, ca)["kubeadm.yaml"]
        return next(d for d in docs if d["kind"] == "KubeProxyConfiguration")

    assert proxy(inv, layout.control_planes[0].name)["conntrack"] == {"maxPerCore": 0, "min": 131072}
    sample = kcp_render.ROOT / "inventories" / "sample"
    assert proxy(sample, "cp1")["conntrack"] == {"maxPerCore": 32768, "min": 131072}
