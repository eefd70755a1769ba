"""Issue 26's defects D1 and D2, checked on the roles' own variables and tasks (Ansible's Templar):

- D1: kubectl was never installed (`kube_node_binaries: [kubeadm, kubelet]` on control planes too), so
  every add-on, label and NPU untaint could only be SKIPPED on a real cluster. Control planes must get
  kubectl, of a version within one minor of the cluster's.
- D2: node labels were applied in the cluster phase for every node, before any worker had joined, so
  `kubectl label` would fail NotFound on a real cluster. The cluster phase labels control planes only; a
  worker gets the labels its kubelet may not set right after its join (roles/kube_node).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar

from tests.helpers.ansible_values import trusted
from tests.helpers.pyimports import load_file

ROOT = Path(__file__).resolve().parents[3]
GROUPS = {"kube_control_plane": ["cp1", "cp2"], "kube_node": ["cp1", "cp2", "w1", "w2"],
          "npu_node": ["w1", "w2"], "all": ["cp1", "cp2", "w1", "w2"]}


@pytest.fixture(scope="module", autouse=True)
def _plugins() -> None:
    init_plugin_loader()


def _defaults(role: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())


def _render(expression: Any, variables: dict[str, Any]) -> Any:
    return Templar(loader=DataLoader(), variables=trusted(variables)).template(trusted(expression))


@pytest.mark.parametrize(("host", "kubectl"), [("cp1", True), ("cp2", True), ("w1", False)])
def test_d1_control_planes_install_kubectl(host: str, kubectl: bool) -> None:
    variables = {**_defaults("kube_node"), "inventory_hostname": host, "groups": GROUPS}
    binaries = _render(variables["kube_node_binaries"], variables)
    assert ("kubectl" in binaries) is kubectl, binaries
    assert {"kubeadm", "kubelet"} <= set(binaries)


def test_d1_kubectl_comes_from_its_own_release_directory() -> None:
    variables = {**_defaults("kube_node"), "inventory_hostname": "cp1", "groups": GROUPS,
                 "ufc_artifact_url": "http://mirror.example/", "ufc_kube_version": "1.34.4"}
    assert _render(variables["kube_node_kubectl_version"], variables) == "1.34.4"
    variables["kube_node_kubectl_version"] = "1.35.4"
    url = _render(variables["kube_node_kubectl_download_url"], variables)
    assert url == "http://mirror.example/kubernetes/v1.35.4/bin/linux/amd64"


def _skew_assert() -> dict[str, Any]:
    tasks = yaml.safe_load((ROOT / "roles/kube_node/tasks/main.yml").read_text())
    return next(t for t in tasks if "skew" in t["name"])


@pytest.mark.parametrize(("kubectl", "ok"), [("1.34.4", True), ("1.33.9", True), ("v1.35.4", True),
                                             ("1.36.1", False), ("1.32.0", False), ("2.34.0", False)])
def test_d1_kubectl_skew_is_refused(kubectl: str, ok: bool) -> None:
    task = _skew_assert()
    variables = {**_defaults("kube_node"), "ufc_kube_version": "1.34.4", "kube_node_kubectl_version": kubectl}
    expression = "{{ " + task["ansible.builtin.assert"]["that"].strip() + " }}"
    assert _render(expression, variables) is ok


def _label_plan_groups() -> Any:
    tasks = yaml.safe_load((ROOT / "roles/ascend_components/tasks/main.yml").read_text())
    task = next(t for t in tasks if (t.get("ufcctl_manifests") or {}).get("component") == "node-labels")
    return task["ufcctl_manifests"]["labels"]


def _filters() -> Any:
    plugin = load_file(ROOT / "roles/ascend_components/filter_plugins/ufcctl_ascend.py")
    return plugin.FilterModule().filters()


def test_d2_cluster_phase_labels_only_nodes_that_exist_then() -> None:
    """The cluster phase's node-labels plan names control planes only (workers join later)."""
    hostvars = {h: {"npu_accelerator_type": "module-910b-8"} for h in GROUPS["all"]}
    expression = _label_plan_groups()
    # render the expression's input, then the filter itself (the role's filter plugin, loaded directly)
    groups_expr = expression.split("| ufcctl_ascend_label_plan")[0].strip().removeprefix("{{").strip()
    planned_groups = _render("{{ " + groups_expr + " }}", {"groups": GROUPS}) if "{'" in groups_expr \
        else GROUPS
    plan = _filters()["ufcctl_ascend_label_plan"](planned_groups, hostvars)
    nodes = {n for g in plan["groups"] for n in g["nodes"]}
    early = sorted(nodes - {"cp1", "cp2"})
    assert nodes == {"cp1", "cp2"}, f"the cluster phase would label {early} before they join"


def test_d2_workers_get_restricted_labels_after_their_join() -> None:
    """kube_node labels, right after the join, what the kubelet may not set itself."""
    module = load_file(ROOT / "roles/kube_node/filter_plugins/ufcctl_kube_node.py")
    joining = module.ufcctl_kube_node_join({
        "hostvars": {"npu_accelerator_type": "module-910b-8", "npu_tor_id": "tor1"},
        "host_arch": "huawei-arm",
        "npu": True, "labels": {}, "tor_label": "npu-tor-id", "token_text": "", "name": "w1",
        "endpoint": "10.0.0.1:8443", "ca_pem": "", "cri_socket": "unix:///run/containerd/containerd.sock",
        "address": "10.0.0.11",
        "taint": {"key": "ufcctl.io/npu-health-pending", "value": "true", "effect": "NoSchedule"}})
    assert joining["kubectl_labels"] == {"node-role.kubernetes.io/worker": "worker"}
    tasks = yaml.safe_load((ROOT / "roles/kube_node/tasks/main.yml").read_text())
    names = [t["name"] for t in tasks]
    label = next(i for i, n in enumerate(names) if n.startswith("Label the node"))
    join = next(i for i, n in enumerate(names) if n.startswith("Join the cluster"))
    marker = names.index("Report the node done to the rollout engine")
    assert join < label < marker
    assert tasks[label]["ansible.builtin.include_role"] == {"name": "k8s_manifests", "tasks_from": "label"}
