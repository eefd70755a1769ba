"""Issue 44: the add-ons' manifests start the programs of their pinned releases as those releases expect
(docs/reference/components.md §9): commands for images without ENTRYPOINT, flags, names, environment,
Services, mounts and CRDs, read on the roles' templates rendered for inventories/sample.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.helpers.addon_render import render_addons


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return render_addons()


def _one(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def _container(workload: dict[str, Any]) -> dict[str, Any]:
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    return container


# D10: MindCluster's Volcano images have no ENTRYPOINT (Dockerfile-scheduler / -controller, v26.0.0)
@pytest.mark.parametrize(("deployment", "program"), [("volcano-scheduler", "/vc-scheduler"),
                                                     ("volcano-controllers", "/vc-controller-manager")])
def test_volcano_images_get_their_program_as_command(rendered, deployment: str, program: str) -> None:
    container = _container(_one(rendered["volcano"], "Deployment", deployment))
    assert container.get("command") == [program]


def test_the_scheduler_loads_the_ascend_plugin_by_its_26_0_0_name(rendered) -> None:
    container = _container(_one(rendered["volcano"], "Deployment", "volcano-scheduler"))
    # the image copies volcano-npu_*.so into /plugins; custom plugins load only with --plugins-dir
    assert "--plugins-dir=/plugins" in container["args"]
    conf = yaml.safe_load(_one(rendered["volcano"], "ConfigMap", "volcano-scheduler-configmap")["data"][
        "volcano-scheduler.conf"])
    names = [p["name"] for tier in conf["tiers"] for p in tier["plugins"]]
    # build.sh:54 of v26.0.0: volcano-npu_${REL_VERSION}, no _linux-<arch> suffix
    assert "volcano-npu_v26.0.0" in names
    assert not [n for n in names if n.startswith("volcano-npu") and n != "volcano-npu_v26.0.0"]


# D15: ClusterD's gRPC server binds $POD_IP:8899 (grpc_init.go:79) and is dialled as clusterd-grpc-svc
def test_clusterd_serves_grpc_on_its_pod_ip_behind_its_service(rendered) -> None:
    objects = rendered["clusterd"]
    deployment = _one(objects, "Deployment", "clusterd")
    env = {e["name"]: e for e in _container(deployment).get("env", [])}
    assert env["POD_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    service = _one(objects, "Service", "clusterd-grpc-svc")
    assert service["metadata"]["namespace"] == "mindx-dl" == deployment["metadata"]["namespace"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    (port,) = service["spec"]["ports"]
    ports = {p.get("name"): p["containerPort"] for p in _container(deployment).get("ports", [])}
    target = ports.get(port["targetPort"], port["targetPort"])
    assert (port["port"], target) == (8899, 8899)


# D21: NodeD on the host's network with XDL_IP; the Device Plugin's HOST_IP and mounts (v26.0.0 manifests)
def test_noded_runs_on_the_host_network_with_its_address(rendered) -> None:
    spec = _one(rendered["noded"], "DaemonSet", "noded")["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    (container,) = spec["containers"]
    env = {e["name"]: e.get("valueFrom") for e in container["env"]}
    assert env["XDL_IP"] == {"fieldRef": {"fieldPath": "status.hostIP"}}
    assert "/dev" in {m["mountPath"] for m in container["volumeMounts"]}


def test_device_plugin_has_its_release_s_mounts_and_host_ip(rendered) -> None:
    daemonset = _one(rendered["device-plugin"], "DaemonSet", "ascend-device-plugin-daemonset")
    spec = daemonset["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    env = {e["name"]: e.get("valueFrom") for e in container["env"]}
    assert env["HOST_IP"] == {"fieldRef": {"fieldPath": "status.hostIP"}}
    volumes = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    mounted = {volumes[m["name"]]: m["mountPath"] for m in container["volumeMounts"]}
    for path in ("/run/containerd", "/etc/vnpu.cfg", "/run/vnpu_cfg_lock"):
        assert mounted.get(path) == path
