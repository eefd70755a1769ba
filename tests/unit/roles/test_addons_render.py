"""Every add-on (nodelocaldns, volcano, ascend_components) renders and schema-validates for
inventories/sample and a generated 16,000-node inventory, as the roles would on the controller.

The roles' own templates and defaults are evaluated with Ansible's templating; the ToR map and the
label plan come from the ascend_components filters (the same functions the role calls); validation
is k8s_manifests' (ufcctl/domain/manifests with kubernetes-validate's schemas). Times and the ToR
ConfigMap's size are printed (run with -s), never asserted.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template

from tests.helpers.ansible_values import trusted as _trusted
from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from tests.helpers.pyimports import load_file
from ufcctl.app.inventory import load_inventory
from ufcctl.domain.addons.tor import MAX_CONFIGMAP_DATA_BYTES
from ufcctl.domain.manifests.component import prepare_component
from ufcctl.domain.manifests.preapply import planned_nodes
from ufcctl.engine.k8s_schemas import KubernetesSchemas

# One worker runs the whole module (pytest-xdist `--dist loadgroup`): its fixture loads and renders a
# 16,000-node inventory, ~90 s under the full lane's load, which each worker running a test of it paid again.
pytestmark = pytest.mark.xdist_group("test_addons_render")

ROOT = Path(__file__).resolve().parents[3]
ROLES = ROOT / "roles"
ASCEND_VARS = yaml.safe_load((ROLES / "ascend_components" / "vars" / "main.yml").read_text())
# (component, templates directory, namespaces), in deploy order (docs/reference/ascend.md §7)
PARTS = [
    # the add-ons play's pre_task (roles/k8s_manifests/tasks/flowcontrol.yml)
    ("flowcontrol", ROLES / "k8s_manifests" / "templates" / "flowcontrol", []),
    ("nodelocaldns", ROLES / "nodelocaldns" / "templates" / "manifests", ["kube-system"]),
    ("device-plugin", ROLES / "ascend_components" / "templates" / "device-plugin", ["kube-system"]),
    ("volcano", ROLES / "volcano" / "templates" / "manifests", ["volcano-system"]),
    *[
        (
            part,
            ROLES / "ascend_components" / "templates" / part,
            ASCEND_VARS["__ascend_components_namespaces"][part],
        )
        for part in ("ascend-operator", "clusterd", "noded", "npu-exporter")
    ],
    ("tor-map", ROLES / "ascend_components" / "templates" / "tor-map", ["kube-system"]),
]


def _filters() -> Any:
    return load_file(ROLES / "ascend_components" / "filter_plugins" / "ufcctl_ascend.py")


FILTERS = _filters()


def _role_defaults() -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for role in ("k8s_manifests", "nodelocaldns", "volcano", "ascend_components"):
        merged.update(_trusted(yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())))
    merged.update(_trusted(ASCEND_VARS))
    return merged


def _render_and_validate(inventory_dir: Path) -> tuple[dict[str, Any], float, float]:
    """(results per component, inventory load seconds, render+validate seconds)."""
    started = time.perf_counter()
    inv = load_inventory(inventory_dir)
    loaded = time.perf_counter()
    groups = {g: inv.group_hosts(g) for g in inv.groups}
    hostvars = {h: dict(host.vars) for h, host in inv.hosts.items()}
    first_cp = groups["kube_control_plane"][0]
    variables = {
        **_role_defaults(),
        **hostvars[first_cp],
        "groups": groups,
        "inventory_hostname": first_cp,
        "playbook_dir": str(ROOT / "playbooks"),
    }
    templar = Templar(loader=DataLoader(), variables=variables)
    results: dict[str, Any] = {}
    try:
        variables["__ascend_components_tor"] = FILTERS.ufcctl_ascend_tor_configmap(groups, hostvars)
    except Exception as err:  # AnsibleFilterError: the role fails with this text
        results["tor-map-error"] = str(err)
    results["labels"] = FILTERS.ufcctl_ascend_label_plan(groups, hostvars)
    templar = Templar(loader=DataLoader(), variables=variables)
    schemas = KubernetesSchemas(templar.template(variables["k8s_manifests_kube_version"]))
    # as the action does: the calling role's files/crds are applied with the component, every other
    # role's only validate; a CRD applied by an earlier component is available to the later ones; the
    # placement check runs on the inventory's nodes with the labels and taints ufcctl gives them
    nodes = planned_nodes(groups, hostvars, npu_taint=variables["k8s_manifests_npu_taint"],
                          tor_label="npu-tor-id")
    earlier: set[str] = set()
    for component, directory, namespaces in PARTS:
        if component == "tor-map" and "tor-map-error" in results:
            continue
        rendered = {
            p.name: templar.template(trust_as_template(p.read_text()))
            for p in sorted(directory.glob("*.yaml.j2"))
        }
        role = ROLES / directory.relative_to(ROLES).parts[0]
        own = {p.name: p.read_text() for p in sorted((role / "files" / "crds").glob("*.yaml"))}
        crds = {p.name: p.read_text() for p in ROLES.glob("*/files/crds/*.yaml") if p.name not in own}
        results[component] = prepared = prepare_component(
            rendered, namespaces, schemas, crds, own_crd_texts=own, nodes=nodes, available_crds=earlier)
        earlier |= {name for names in prepared.crds.values() for name in names}
    return results, loaded - started, time.perf_counter() - loaded


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, tuple[dict[str, Any], float, float]]:
    init_plugin_loader()
    big = tmp_path_factory.mktemp("inv16k")
    # explicit style: every NPU host has an IP (ansible_host), which the ToR map needs
    write_cluster_inventory(big, ClusterShape(npu_nodes=16000), style="explicit")
    out = {"sample": _render_and_validate(ROOT / "inventories" / "sample"), "16k": _render_and_validate(big)}
    print(
        f"\nmachine: {platform.machine()} {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs"
    )
    for name, (results, load_s, render_s) in out.items():
        tor = results.get("__tor_size")
        print(
            f"{name}: inventory load {load_s:.2f} s, render + validate of every add-on {render_s:.2f} s",
            tor or "",
        )
    return out


@pytest.mark.parametrize("inventory", ["sample", "16k"])
def test_every_addon_object_is_valid(rendered, inventory: str) -> None:
    results, _, _ = rendered[inventory]
    for component, _, _ in PARTS:
        if component in results:
            assert results[component].ok, f"{inventory} {component}: " + "; ".join(
                map(str, results[component].problems)
            )
    counts = {c: results[c].objects for c, _, _ in PARTS if c in results}
    print(f"\n{inventory}: objects per component {counts}")


def test_sample_tor_map_names_the_hosts_without_an_address(rendered) -> None:
    # inventories/sample reaches NPU hosts by DNS name (only npu016 has ansible_host), and Volcano
    # matches ToR servers by IP: the role fails and names each host and the fix.
    results, _, _ = rendered["sample"]
    error = results["tor-map-error"]
    assert "host npu001: server_ip 'npu001' is not an IP address (set npu_node_ip)" in error
    assert "npu016" not in error


def test_16k_tor_map_fits_under_the_configmap_limit(rendered) -> None:
    results, _, _ = rendered["16k"]
    assert "tor-map-error" not in results, results.get("tor-map-error")
    (cm,) = [o for o in yaml.safe_load_all(results["tor-map"].files["10-basic-tor-node-cm.yaml"]) if o]
    size = sum(len(k.encode()) + len(v.encode()) for k, v in cm["data"].items())
    print(
        f"\n16k: basic-tor-node-cm data {size} bytes = {size / MAX_CONFIGMAP_DATA_BYTES:.1%} "
        "of the 1 MiB limit (fits: one ConfigMap, not split)"
    )
    assert size <= MAX_CONFIGMAP_DATA_BYTES
    assert cm["data"]["tor_info"].count("server_ip") == 16000


def test_16k_label_plan_is_few_calls(rendered) -> None:
    plan = rendered["16k"][0]["labels"]
    assert plan["nodes"] == 16003  # 16,000 NPU workers + 3 control-plane hosts
    calls = len(plan["groups"])
    print(f"\n16k: {plan['nodes']} nodes labelled in {calls} kubectl calls")
    assert calls == 1 + 32  # masters, then 16,000 identical workers in chunks of 500


# The suggested PriorityLevelConfigurations every 1.29+ apiserver keeps (reference: default.go).
SUGGESTED_LEVELS = {"exempt", "leader-election", "node-high", "system", "workload-high", "workload-low",
                    "global-default", "catch-all"}


def test_apf_routes_the_fleet_s_writers_to_levels_that_exist(rendered) -> None:
    """Each FlowSchema names a level that exists; every ServiceAccount it names is one the add-ons create,
    so a renamed account cannot silently fall back to the shared workload-low level."""
    results, _, _ = rendered["16k"]
    objects = [o for c, _, _ in PARTS if c in results for text in results[c].files.values()
               for o in yaml.safe_load_all(text) if o]
    levels = {o["metadata"]["name"] for o in objects if o["kind"] == "PriorityLevelConfiguration"}
    accounts = {(o["metadata"]["namespace"], o["metadata"]["name"])
                for o in objects if o["kind"] == "ServiceAccount"}
    schemas = [o for o in objects if o["kind"] == "FlowSchema"]
    assert {s["spec"]["priorityLevelConfiguration"]["name"] for s in schemas} <= levels | SUGGESTED_LEVELS
    named = {(subject["serviceAccount"]["namespace"], subject["serviceAccount"]["name"])
             for s in schemas for rule in s["spec"]["rules"] for subject in rule["subjects"]
             if subject["kind"] == "ServiceAccount"}
    assert named and named <= accounts, named - accounts
    heartbeats = next(s for s in schemas if s["metadata"]["name"] == "ufcctl-kubelet-heartbeats")
    assert heartbeats["spec"]["matchingPrecedence"] < 400  # ahead of the suggested system-node-high
    level = next(o for o in objects if o["metadata"]["name"] == "ufcctl-node-heartbeats")
    assert level["spec"]["limited"]["lendablePercent"] == 0
