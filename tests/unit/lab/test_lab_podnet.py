"""The real lab's pod network (ufcctl/lab/podnet.py) and its mode (`lab up --kube`), without podman: each
node's /24, its CNI conflist, the routes to every other node's pods, what a running lab keeps, and what the
inventory of a real lab says beyond an emulated one's."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest
import yaml

from ufcctl.errors import InputError
from ufcctl.lab import podnet
from ufcctl.lab.inventory import REGISTRY_CACHE_VARS, InventoryPaths, render_inventory
from ufcctl.lab.lab import _choose_kube
from ufcctl.lab.layout import LAB_POD_SUBNET, plan_layout
from ufcctl.lab.nodes import LABEL_KUBE, SYSCTLS, container_spec
from ufcctl.lab.podman import NetworkInfo

LAYOUT = plan_layout("t1", 4, "10.89.70.0/24")


def test_every_node_gets_its_own_slice_of_the_lab_pod_range() -> None:
    cidrs = podnet.pod_cidrs(LAYOUT)
    assert list(cidrs) == [n.name for n in LAYOUT.nodes]
    nets = [ipaddress.ip_network(c) for c in cidrs.values()]
    assert all(n.prefixlen == 24 and n.subnet_of(ipaddress.ip_network(LAB_POD_SUBNET)) for n in nets)
    assert len(set(nets)) == len(nets)


def test_a_nodes_conflist_hands_out_its_slice_through_a_bridge() -> None:
    name = LAYOUT.workers[0].name
    doc = json.loads(podnet.conflist(podnet.pod_cidrs(LAYOUT)[name]))
    bridge = doc["plugins"][0]
    assert bridge["type"] == "bridge" and bridge["isGateway"] and bridge["ipMasq"]
    assert bridge["ipam"]["ranges"] == [[{"subnet": podnet.pod_cidrs(LAYOUT)[name]}]]


def test_a_node_routes_every_other_nodes_pods_through_that_node() -> None:
    me = LAYOUT.control_planes[0]
    routes = dict(podnet.routes(LAYOUT, me.name))
    cidrs = podnet.pod_cidrs(LAYOUT)
    assert cidrs[me.name] not in routes
    assert routes == {cidrs[n.name]: n.ip for n in LAYOUT.nodes if n is not me}
    unit = podnet.routes_unit(LAYOUT, me.name)
    for dst, via in routes.items():
        assert f"ip route replace {dst} via {via}" in unit
    assert f"ip addr replace {podnet.NODELOCALDNS_IP}/32 dev lo" in unit
    script = podnet.node_script(LAYOUT, me.name)
    assert podnet.CONFLIST in script and f"systemctl enable {podnet.ROUTES_UNIT}" in script


def test_nodes_start_forwarding_since_their_proc_sys_is_read_only() -> None:
    spec = container_spec(LAYOUT.workers[0], LAYOUT, "img", {}, Path("/tmp/nfs"))
    assert ("net.ipv4.ip_forward", "1") in spec.sysctls == SYSCTLS


def _net(labels: dict[str, str]) -> NetworkInfo:
    return NetworkInfo(name="ufcctl-lab-t1", subnets=("10.89.70.0/24",), labels=labels)


def test_a_running_lab_keeps_its_mode_and_refuses_another() -> None:
    assert _choose_kube(None, None) == "emulated"
    assert _choose_kube(None, "real") == "real"
    assert _choose_kube(_net({LABEL_KUBE: "real"}), None) == "real"
    assert _choose_kube(_net({}), None) == "emulated"  # a lab made before the modes
    with pytest.raises(InputError, match="runs --kube real, not emulated"):
        _choose_kube(_net({LABEL_KUBE: "real"}), "emulated")


def test_a_real_labs_inventory_mirrors_registry_k8s_io_and_names_its_pod_range(tmp_path: Path) -> None:
    paths = InventoryPaths(tmp_path / "inv", tmp_path / "key")
    keys = {n.name: "ssh-ed25519 AAAA" for n in LAYOUT.nodes}
    real = render_inventory(LAYOUT, paths, keys, kube="real")
    emulated = render_inventory(LAYOUT, paths, keys)
    cluster = yaml.safe_load(real["group_vars/all/cluster.yml"])
    assert cluster["kube_control_plane_pod_subnet"] == LAB_POD_SUBNET
    assert cluster["kube_control_plane_ignore_preflight_errors"] == ["SystemVerification"]
    assert "kube_control_plane_pod_subnet" not in yaml.safe_load(emulated["group_vars/all/cluster.yml"])
    mirrored = yaml.safe_load(real[REGISTRY_CACHE_VARS])["ufc_image_registries"]
    assert "registry.k8s.io" in mirrored
    assert "registry.k8s.io" not in yaml.safe_load(emulated[REGISTRY_CACHE_VARS])["ufc_image_registries"]
