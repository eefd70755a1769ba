"""Topology counts and failure domains come from the hosts' merged vars."""

from __future__ import annotations

from ufcctl.domain.inventory.resolve import resolve
from ufcctl.domain.inventory.sources import InventorySources, SourceFile
from ufcctl.domain.inventory.topology import count_topology, failure_domains

DATA = {
    "all": {
        "children": {
            "kube_node": {
                "children": {
                    "npu_node": {"hosts": {"n[1:6]": None}, "vars": {"npu_accelerator_type": "module"}}
                }
            },
            "tor_a": {"hosts": {"n[1:3]": None}, "vars": {"npu_tor_id": "a", "npu_super_pod_id": 0}},
            "tor_b": {"hosts": {"n[4:5]": None}, "vars": {"npu_tor_id": "b", "npu_super_pod_id": 0}},
            "slices": {"children": {"s0": {"hosts": {"n[1:6:2]": None}, "vars": {"npu_slice_id": 0}}}},
            "cp": {"hosts": {"cp1": {"rack": "r1"}}},
        }
    }
}


def inventory():  # type: ignore[no-untyped-def]
    return resolve(InventorySources("inv", (SourceFile("hosts.yml", DATA),))).inventory


def test_counts() -> None:
    topo = count_topology(inventory())
    assert (topo.hosts, topo.npu_nodes) == (7, 6)
    assert topo.groups["tor_a"] == 3 and topo.groups["kube_node"] == 6 and topo.groups["all"] == 7
    assert topo.domains["tors"] == {"a": 3, "b": 2}
    assert topo.domains["super_pods"] == {"0": 5}
    assert topo.domains["slices"] == {"0": 3}
    assert topo.domains["racks"] == {"r1": 1}
    assert topo.domains["accelerator_types"] == {"module": 6}
    assert topo.npu_nodes_without == {
        "accelerator_types": 0,
        "tors": 1,
        "super_pods": 1,
        "racks": 6,
        "slices": 3,
    }


def test_failure_domains_keep_inventory_order_and_skip_unset() -> None:
    inv = inventory()
    assert failure_domains(inv, "npu_tor_id") == {"a": ["n1", "n2", "n3"], "b": ["n4", "n5"]}
    assert failure_domains(inv, "npu_tor_id", hosts=["n5", "n1", "n6"]) == {"b": ["n5"], "a": ["n1"]}
