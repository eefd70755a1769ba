"""Deploy's two phases: which hosts the cluster phase contacts and which workers the node phase joins."""

from __future__ import annotations

from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.domain.inventory.phases import split_phases, workers


def _inventory() -> Inventory:
    membership = {
        "cp1": {"kube_control_plane", "etcd_core", "kube_node"},  # a control plane that also runs pods
        "lb1": {"apiserver_lb"},
        "w1": {"kube_node", "npu_node"},
        "w2": {"kube_node", "npu_node"},
        "w3": {"kube_node", "nfs_server"},  # a worker that also serves NFS
        "util": set(),  # in no group but all: the cluster phase's preflight and tuning still run there
    }
    hosts = {n: Host(n, {}, frozenset({"all", *g})) for n, g in membership.items()}
    names = sorted({g for gs in membership.values() for g in gs})
    groups = {g: Group(g, hosts=tuple(h for h, gs in membership.items() if g in gs)) for g in names}
    return Inventory("inv", hosts, groups)


def test_workers_are_kube_node_hosts_that_are_not_control_planes() -> None:
    assert workers(_inventory()) == ["w1", "w2", "w3"]


def test_every_host_gets_the_cluster_phase_unless_it_is_only_a_worker() -> None:
    inv = _inventory()
    phases = split_phases(inv, list(inv.hosts))
    assert phases.cluster == ("cp1", "lb1", "w3", "util")
    assert phases.nodes == ("w1", "w2", "w3")


def test_a_limit_to_new_workers_has_no_cluster_phase() -> None:
    phases = split_phases(_inventory(), ["w2"])
    assert phases.cluster == () and phases.nodes == ("w2",)
