"""Cluster rules: each broken inventory gives its problem (file, object, fix); the valid one gives none."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from ufcctl.domain.inventory.resolve import resolve
from ufcctl.domain.inventory.sources import InventorySources, SourceFile, VarsEntry
from ufcctl.domain.inventory_check import validate

CP = {"kube_control_plane": {"hosts": {f"cp{i}": {"ansible_host": f"10.0.0.1{i}"} for i in (1, 2, 3)}}}
# Calico tor mode (the role's default): a BGP peer for the ToR and one for the control planes
# (domain/inventory/bgp_peers.py; tests/unit/domain/test_inventory_bgp_peers.py)
BGP = {
    "cni_calico_tor_peers": {"tor-1": {"ip": "192.0.2.1", "as_number": 65001}},
    "cni_calico_extra_peers": [{"name": "spine-cp", "ip": "192.0.2.254", "as_number": 65100,
                                "node_selector": "has(node-role.kubernetes.io/control-plane)"}],
}


def base() -> dict[str, Any]:
    return {
        "all": {
            "vars": {"ufc_vip": "10.0.0.10", **copy.deepcopy(BGP)},
            "children": {
                **copy.deepcopy(CP),
                "etcd_core": {"children": {"kube_control_plane": None}},
                "etcd_events": {"children": {"kube_control_plane": None}},
                "etcd_pods": {"hosts": {"e[1:3]": None}},
                "kube_node": {
                    "children": {
                        "npu_node": {
                            "hosts": {"npu[1:4]": None},
                            "vars": {"npu_accelerator_type": "module-910b-8"},
                        }
                    }
                },
                "tor_1": {"hosts": {"npu[1:4]": None}, "vars": {"npu_tor_id": "tor-1", "npu_slice_id": 0}},
            },
        }
    }


def check(data: dict[str, Any], group_vars: dict[str, Any] | None = None,
          deploy: bool = True) -> tuple[list[str], list[str]]:
    src = InventorySources(
        "inv",
        (SourceFile("hosts.yml", data),),
        group_vars={
            name: VarsEntry(name, False, (SourceFile(f"group_vars/{name}", d),))
            for name, d in (group_vars or {}).items()
        },
    )
    resolution = resolve(src)
    assert not resolution.problems, resolution.problems
    report = validate(resolution.inventory, deploy=deploy)
    return [str(p) for p in report.problems], [str(w) for w in report.warnings]


def children(data: dict[str, Any]) -> dict[str, Any]:
    return data["all"]["children"]


def test_the_base_inventory_is_valid() -> None:
    assert check(base()) == ([], [])


Mutation = Callable[[dict[str, Any]], None]
CASES: list[tuple[str, Mutation, str]] = [
    (
        "no control plane",
        lambda d: children(d).pop("kube_control_plane"),
        "hosts.yml: group kube_control_plane: has no hosts",
    ),
    ("etcd cluster absent", lambda d: children(d).pop("etcd_events"), "group etcd_events: has no hosts"),
    (
        "even etcd",
        lambda d: children(d)["etcd_pods"].update(hosts={"e[1:4]": None}),
        "group etcd_pods: has 4 members; etcd needs an odd count",
    ),
    (
        "single etcd",
        lambda d: children(d)["etcd_pods"].update(hosts={"e1": None}),
        "group etcd_pods: has a single member: no quorum survives its loss — use 3 or 5 members (or set "
        "ufc_allow_single_etcd: true for a lab)",
    ),
    (
        "two clusters share a client port",
        lambda d: children(d)["etcd_events"].update(vars={"etcd_events_client_port": 2379}),
        "hosts.yml: hosts cp[1:3]: etcd_events_client_port 2379 is also etcd_core_client_port on this host",
    ),
    (
        "client port equals peer port",
        lambda d: children(d)["etcd_pods"].update(vars={"etcd_pods_client_port": 2384}),
        "etcd_pods_peer_port 2384 is also etcd_pods_client_port on this host",
    ),
    (
        "port is not a number",
        lambda d: children(d)["etcd_pods"].update(vars={"etcd_pods_peer_port": "x"}),
        "hosts e[1:3]: etcd_pods_peer_port 'x' is not a port number",
    ),
    (
        "duplicate ansible_host",
        lambda d: children(d)["kube_control_plane"]["hosts"]["cp3"].update(ansible_host="10.0.0.11"),
        "hosts.yml: host cp3: address 10.0.0.11 is also host cp1's",
    ),
    ("vip missing", lambda d: d["all"].pop("vars"), "has 3 hosts but ufc_vip is not set on cp[1:3]"),
    (
        "vip is a host address",
        lambda d: d["all"]["vars"].update(ufc_vip="10.0.0.12"),
        "hosts.yml: ufc_vip: 10.0.0.12 is the address of host cp2",
    ),
    (
        "vip is not an address",
        lambda d: d["all"]["vars"].update(ufc_vip="vip.example"),
        "ufc_vip: 'vip.example' is not an IP address",
    ),
    (
        "unknown accelerator type",
        lambda d: children(d)["kube_node"]["children"]["npu_node"]["vars"].update(
            npu_accelerator_type="910c"
        ),
        "hosts npu[1:4]: npu_accelerator_type '910c' is not a known type — use one of module, half",
    ),
    (
        "missing accelerator type",
        lambda d: children(d)["kube_node"]["children"]["npu_node"].pop("vars"),
        "hosts npu[1:4]: npu_accelerator_type is not set",
    ),
    (
        "npu_node outside kube_node",
        lambda d: children(d).update(npu_node=children(d).pop("kube_node")["children"]["npu_node"]),
        "group npu_node: 4 of its hosts are not in kube_node (npu[1:4])",
    ),
    (
        "negative slice id",
        lambda d: children(d)["tor_1"]["vars"].update(npu_slice_id=-1),
        "hosts npu[1:4]: npu_slice_id -1 is not a whole number >= 0",
    ),
    (
        "registry cache of an unknown tier",
        lambda d: children(d).update(registry_cache={
            "hosts": {"rc1": {"ansible_host": "10.0.1.1", "npu_tor_id": "tor-1",
                              "registry_cache_tier": "rack"}},
            "vars": {"registry_cache_upstreams": [{"name": "hub", "registry": "docker.io",
                                                   "url": "https://registry-1.docker.io", "port": 5000}]}}),
        "host rc1: registry_cache_tier 'rack' is unknown; use one of tor, super_pod",
    ),
    (
        "registry caches without upstreams, on plain http",
        lambda d: children(d).update(registry_cache={
            "hosts": {"rc1": {"ansible_host": "10.0.1.1", "npu_tor_id": "tor-1"}},
            "vars": {"registry_cache_scheme": "http"}}),
        "group registry_cache: registry_cache_upstreams is not set",
    ),
    (
        "tor id is a list",
        lambda d: children(d)["tor_1"]["vars"].update(npu_tor_id=["a"]),
        "npu_tor_id must be a name or number, not list",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule(mutate: Mutation, expected: str) -> None:
    data = base()
    mutate(data)
    problems, _ = check(data)
    assert any(expected in p for p in problems), problems


def test_a_valid_registry_cache_setup_passes() -> None:
    data = base()
    children(data)["registry_cache"] = {
        "hosts": {"rc1": {"ansible_host": "10.0.1.1", "npu_tor_id": "tor-1"}},
        "vars": {"registry_cache_scheme": "http", "registry_cache_insecure": True,
                 "registry_cache_upstreams": [{"name": "lab", "registry": "10.0.9.9:5000",
                                               "url": "http://10.0.9.9:5000", "port": 5001}]}}
    assert check(data) == ([], [])


def test_single_etcd_allowed_for_labs_is_a_warning() -> None:
    data = base()
    for name in ("etcd_core", "etcd_events", "etcd_pods"):
        children(data)[name] = {"hosts": {"cp1": None}}
    problems, warnings = check(data, group_vars={"all.yml": {"ufc_allow_single_etcd": True}})
    assert problems == []
    assert len(warnings) == 3 and "fine for a lab only" in warnings[0]


def test_same_address_on_another_ssh_port_is_allowed() -> None:
    # Outside the groups that bind services (addresses.py SERVICE_GROUPS): two workers in containers
    # behind one address, port-forwarded.
    data = base()
    data["all"]["children"]["kube_node"]["children"]["npu_node"]["hosts"] = {
        "npu1": {"ansible_host": "10.0.1.1"}, "npu2": {"ansible_host": "10.0.1.1", "ansible_port": 2222},
        "npu[3:4]": None}
    assert check(data)[0] == []


def test_problem_names_the_file_that_set_the_value() -> None:
    problems, _ = check(base(), group_vars={"all.yml": {"ufc_vip": "10.0.0.13"}})
    assert problems == [
        "group_vars/all.yml: ufc_vip: 10.0.0.13 is the address of host cp3 — the VIP must be an "
        "unused address that keepalived moves between hosts"
    ]


def test_all_problems_at_once() -> None:
    data = base()
    children(data).pop("kube_control_plane")
    children(data)["etcd_pods"]["hosts"] = {"e[1:2]": None}
    children(data)["tor_1"]["vars"]["npu_super_pod_id"] = "x"
    problems, _ = check(data)
    assert len(problems) == 5, problems  # control plane, core + events (empty), pods (even), super pod id
