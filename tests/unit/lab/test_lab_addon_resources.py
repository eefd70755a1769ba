"""The lab's add-on resources (ufcctl/lab/inventory.py LAB_ADDON_RESOURCES): every add-on container asks
for 10m CPU at most and has no CPU limit, and each lab node (2 CPUs) holds, at worst, every add-on pod that
may land on it beside kubeadm's own pods; the roles' defaults would not fit. The add-ons are the roles'
templates rendered for inventories/sample with the lab's values (tests/helpers/addon_render.py); where they
may land is read on the lab inventory's nodes as ufcctl registers them (ufcctl/domain/manifests/preapply)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.addon_render import render_addons
from tests.unit.roles.test_addon_resources import containers
from ufcctl.app.inventory import load_inventory
from ufcctl.domain.manifests.preapply import PlannedNode, planned_nodes, selects, tolerates
from ufcctl.lab.inventory import ADDON_VARS, LAB_ADDON_RESOURCES, InventoryPaths, render_inventory
from ufcctl.lab.layout import plan_layout

ROOT = Path(__file__).resolve().parents[3]
LAB_NODE_CPU_M = 2000  # every lab node is a container that shows 2 CPUs
# kubeadm's pods keep their own requests (cmd/kubeadm/app/phases/controlplane/manifests.go; CoreDNS's
# Deployment in cmd/kubeadm/app/phases/addons/dns): control planes run kube-apiserver 250m,
# kube-controller-manager 200m and kube-scheduler 100m (etcd runs outside pods); CoreDNS asks 100m a
# replica, 2 replicas on a lab (nodelocaldns_coredns_min_replicas), which may both land on one node.
KUBEADM_CONTROL_PLANE_M = 250 + 200 + 100
COREDNS_M, COREDNS_REPLICAS = 100, 2
HARD_EFFECTS = ("NoSchedule", "NoExecute")


def _millicpu(value: Any) -> int:
    text = str(value)
    return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)


def _pod_request(pod: dict[str, Any]) -> int:
    """The scheduler's CPU request of a pod: its containers' sum, or its largest init container's."""
    def cpu(c: dict[str, Any]) -> int:
        return _millicpu(((c.get("resources") or {}).get("requests") or {}).get("cpu", 0))
    return max([sum(cpu(c) for c in pod["containers"]), *(cpu(c) for c in pod.get("initContainers", []))])


def _one_per_node(template: dict[str, Any]) -> bool:
    labels = template["metadata"].get("labels") or {}
    terms = (((template["spec"].get("affinity") or {}).get("podAntiAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    return any(t.get("topologyKey") == "kubernetes.io/hostname"
               and (t.get("labelSelector") or {}).get("matchLabels", {}).items() <= labels.items()
               for t in terms)


def worst_case(rendered: dict[str, list[dict[str, Any]]], node: PlannedNode) -> dict[str, int]:
    """{workload: millicpu} of every add-on pod that may land on `node`, as many as may land there at once."""
    out = {}
    for objects in rendered.values():
        for obj in objects:
            if obj["kind"] not in ("DaemonSet", "Deployment"):
                continue
            template = obj["spec"]["template"]
            pod = template["spec"]
            tolerations = pod.get("tolerations") or []
            if not selects(pod, node) or any(t.effect in HARD_EFFECTS and not tolerates(tolerations, t)
                                             for t in node.taints):
                continue
            one = obj["kind"] == "DaemonSet" or _one_per_node(template)
            pods = 1 if one else int(obj["spec"]["replicas"])
            out[obj["metadata"]["name"]] = pods * _pod_request(pod)
    return out


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> tuple[Path, list[PlannedNode]]:
    tmp = tmp_path_factory.mktemp("lab")
    layout = plan_layout("t1", 2, "10.89.71.0/24")
    inv = tmp / "inv"
    keys = {n.name: "ssh-ed25519 K" for n in layout.nodes}
    files = render_inventory(layout, InventoryPaths(inv, tmp / "key"), keys)
    for rel, content in files.items():
        (inv / rel).parent.mkdir(parents=True, exist_ok=True)
        (inv / rel).write_text(content)
    loaded = load_inventory(inv)
    groups = {g: loaded.group_hosts(g) for g in loaded.groups}
    hostvars = {h: dict(host.vars) for h, host in loaded.hosts.items()}
    taint = yaml.safe_load((ROOT / "roles" / "k8s_manifests" / "defaults" / "main.yml").read_text())[
        "k8s_manifests_npu_taint"]
    return inv, planned_nodes(groups, hostvars, npu_taint=taint, tor_label="npu-tor-id")


@pytest.fixture(scope="module")
def lab_rendered(lab) -> dict[str, list[dict[str, Any]]]:
    inv, _ = lab
    return render_addons(**yaml.safe_load((inv / ADDON_VARS).read_text()))


def test_the_lab_inventory_carries_the_lab_values_once_each(lab) -> None:
    inv, _ = lab
    text = (inv / ADDON_VARS).read_text()
    assert yaml.safe_load(text) == LAB_ADDON_RESOURCES
    assert "&id" not in text and "*id" not in text  # no YAML anchors: each value written out where it is set


def test_every_add_on_container_asks_the_lab_for_10m_and_has_no_cpu_limit(lab_rendered) -> None:
    found = containers(lab_rendered)
    assert found
    for where, container in found.items():
        resources = container.get("resources") or {}
        assert _millicpu((resources.get("requests") or {}).get("cpu", 0)) <= 10, where
        assert "cpu" not in (resources.get("limits") or {}), where


@pytest.mark.parametrize(("kind", "admitted"), [("control plane", False), ("NPU worker", False),
                                               ("NPU worker", True)],
                         ids=["control-plane", "npu-worker-held", "npu-worker-admitted"])
def test_each_lab_node_holds_its_add_ons_beside_kubeadm_s_pods(lab, lab_rendered, kind: str,
                                                               admitted: bool) -> None:
    """An NPU worker registers under the NPU health taint; once admitted (taint gone) more pods may land."""
    _, nodes = lab
    node = next(n for n in nodes if n.kind == kind)
    if admitted:
        node = replace(node, taints=())
    addons = worst_case(lab_rendered, node)
    kubeadm = (KUBEADM_CONTROL_PLANE_M if kind == "control plane" else 0) + COREDNS_M * COREDNS_REPLICAS
    total = sum(addons.values()) + kubeadm
    print(f"\nlab {kind} {node.name}: add-ons at most {sum(addons.values())}m {addons}, kubeadm's pods "
          f"{kubeadm}m, total {total}m of {LAB_NODE_CPU_M}m")
    assert "calico-node" in addons and "node-local-dns" in addons
    assert total <= LAB_NODE_CPU_M


def test_the_roles_defaults_would_not_fit_a_lab_node(lab) -> None:
    """What the lab values are for: the production requests leave the lab's pods Pending."""
    _, nodes = lab
    rendered = render_addons()
    worker = next(n for n in nodes if n.kind == "NPU worker")
    daemonsets = {name: m for name, m in worst_case(rendered, worker).items()
                  if name in ("calico-node", "node-local-dns", "ascend-device-plugin-daemonset", "noded",
                              "npu-exporter")}
    assert sum(daemonsets.values()) == 2275 > LAB_NODE_CPU_M - COREDNS_M
    control_plane = next(n for n in nodes if n.kind == "control plane")
    assert worst_case(rendered, control_plane)["volcano-scheduler"] == 2000
