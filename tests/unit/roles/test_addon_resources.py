"""Every add-on container's resources come from a role variable: the defaults render the values the
manifests always carried, and a value set in the inventory reaches its container and no other. Read on the
roles' templates rendered for inventories/sample (tests/helpers/addon_render.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.addon_render import render_addons

# (component, workload kind, workload name, container), the variable(s) that set its resources, and the
# resources they render by default (the manifests' literals before the variables existed). install-cni,
# calico-node's init container, has no resources: its pod is sized by calico-node's.
ROWS: list[tuple[tuple[str, str, str, str], tuple[str, ...], dict[str, Any]]] = [
    (("cni", "DaemonSet", "calico-node", "calico-node"), ("cni_calico_node_resources",),
     {"requests": {"cpu": "250m", "memory": "256Mi"}}),
    (("cni", "DaemonSet", "calico-node", "install-cni"), (), {}),
    (("cni", "Deployment", "calico-typha", "calico-typha"), ("cni_calico_typha_resources",),
     {"requests": {"cpu": "250m", "memory": "256Mi"}}),
    (("cni", "Deployment", "calico-kube-controllers", "calico-kube-controllers"),
     ("cni_calico_kube_controllers_resources",), {"requests": {"cpu": "100m", "memory": "128Mi"}}),
    (("nodelocaldns", "DaemonSet", "node-local-dns", "node-cache"),
     ("nodelocaldns_cpu_request", "nodelocaldns_memory_request", "nodelocaldns_memory_limit"),
     {"requests": {"cpu": "25m", "memory": "5Mi"}, "limits": {"memory": "200Mi"}}),
    (("nodelocaldns", "Deployment", "coredns-autoscaler", "autoscaler"),
     ("nodelocaldns_coredns_autoscaler_resources",), {"requests": {"cpu": "20m", "memory": "10Mi"}}),
    (("device-plugin", "DaemonSet", "ascend-device-plugin-daemonset", "device-plugin-01"),
     ("ascend_components_device_plugin_resources",),
     {"requests": {"memory": "500Mi", "cpu": "500m"}, "limits": {"memory": "500Mi", "cpu": "500m"}}),
    (("noded", "DaemonSet", "noded", "noded"), ("ascend_components_noded_resources",),
     {"requests": {"memory": "300Mi", "cpu": "500m"}, "limits": {"memory": "300Mi", "cpu": "500m"}}),
    (("npu-exporter", "DaemonSet", "npu-exporter", "npu-exporter"),
     ("ascend_components_npu_exporter_resources",),
     {"requests": {"memory": "1000Mi", "cpu": "1000m"}, "limits": {"memory": "1000Mi", "cpu": "1000m"}}),
    (("clusterd", "Deployment", "clusterd", "clusterd"), ("ascend_components_clusterd_resources",),
     {"requests": {"memory": "1Gi", "cpu": "1"}, "limits": {"memory": "4Gi", "cpu": "4"}}),
    (("ascend-operator", "Deployment", "ascend-operator-manager", "ascend-operator"),
     ("ascend_components_ascend_operator_resources",),
     {"requests": {"memory": "300Mi", "cpu": "1000m"}, "limits": {"memory": "2Gi", "cpu": "2000m"}}),
    (("volcano", "Deployment", "volcano-scheduler", "volcano-scheduler"), ("volcano_scheduler_resources",),
     {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "12Gi"}}),
    (("volcano", "Deployment", "volcano-controllers", "volcano-controllers"),
     ("volcano_controller_resources",),
     {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "8Gi"}}),
    (("nfs-provisioner", "Deployment", "nfs-subdir-external-provisioner", "nfs-subdir-external-provisioner"),
     ("nfs_provisioner_resources",),
     {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}}),
]
IDS = ["/".join(where[2:]) for where, _, _ in ROWS]
WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet", "Job")


def containers(rendered: dict[str, list[dict[str, Any]]]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """Every container and init container of every workload, by (component, kind, name, container)."""
    found = {}
    for component, objects in rendered.items():
        for obj in objects:
            if obj["kind"] not in WORKLOADS:
                continue
            pod = obj["spec"]["template"]["spec"]
            for container in [*pod.get("initContainers", []), *pod["containers"]]:
                found[(component, obj["kind"], obj["metadata"]["name"], container["name"])] = container
    return found


def _marked(index: int, names: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(inventory values, the resources they must render): a CPU figure unique to the row."""
    cpu, memory = f"{index + 1}01m", f"{index + 1}7Mi"
    if names == ("nodelocaldns_cpu_request", "nodelocaldns_memory_request", "nodelocaldns_memory_limit"):
        return ({names[0]: cpu, names[1]: memory, names[2]: "999Mi"},
                {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": "999Mi"}})
    (name,) = names
    value = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": "999Mi"}}
    return {name: value}, value


@pytest.fixture(scope="module")
def defaults() -> dict[tuple[str, str, str, str], dict[str, Any]]:
    return containers(render_addons())


@pytest.fixture(scope="module")
def overridden() -> tuple[dict[tuple[str, str, str, str], dict[str, Any]], dict[str, dict[str, Any]]]:
    values: dict[str, Any] = {}
    expected = {}
    for index, (_, names, _) in enumerate(ROWS):
        if names:
            given, expected[IDS[index]] = _marked(index, names)
            values.update(given)
    return containers(render_addons(**values)), expected


def test_the_table_names_every_add_on_container(defaults) -> None:
    assert sorted(defaults) == sorted(where for where, _, _ in ROWS)


@pytest.mark.parametrize(("where", "names", "default"), ROWS, ids=IDS)
def test_the_defaults_render_the_manifests_former_values(defaults, where, names, default) -> None:
    assert defaults[where].get("resources", {}) == default


@pytest.mark.parametrize(("where", "names", "default"), [r for r in ROWS if r[1]],
                         ids=[i for i, r in zip(IDS, ROWS, strict=True) if r[1]])
def test_a_value_set_in_the_inventory_reaches_its_container(overridden, where, names, default) -> None:
    rendered, expected = overridden
    assert rendered[where]["resources"] == expected["/".join(where[2:])], names


def test_the_provisioner_root_is_the_nfs_share_unless_another_volume_is_given() -> None:
    def root(**overrides: object) -> dict:
        deploy = next(d for d in render_addons(**overrides)["nfs-provisioner"] if d["kind"] == "Deployment")
        return deploy["spec"]["template"]["spec"]["volumes"][0]

    assert "persistentVolumeClaim" in root() or "nfs" in root()
    given = root(nfs_provisioner_root_volume={"emptyDir": {}})
    assert given == {"name": given["name"], "emptyDir": {}}
