"""Calico `tor` BGP mode at inventory check time (domain/inventory/bgp_peers.py, issue 44 D14): every
kube_node's ToR has a cni_calico_tor_peers entry, and every Kubernetes node without a ToR (the control
planes first) is selected by a cni_calico_extra_peers entry; without a peer and without the node mesh
its pods are unreachable from the rest of the cluster."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.domain.test_inventory_validate import base, check, children
from ufcctl.app.inventory import check_inventory
from ufcctl.paths import SAMPLE_INVENTORY

TOR_1 = {"tor-1": {"ip": "192.0.2.1", "as_number": 65001}}
CP_PEER = {"name": "spine-cp", "ip": "192.0.2.254", "as_number": 65100,
           "node_selector": "has(node-role.kubernetes.io/control-plane)"}


def _bare() -> dict[str, Any]:
    """test_inventory_validate's base inventory without any cni_calico_* setting."""
    data = base()
    data["all"]["vars"] = {k: v for k, v in data["all"]["vars"].items() if not k.startswith("cni_calico_")}
    return data


def _with(tor_peers: Any = None, extra: Any = None, **more: Any) -> dict[str, Any]:
    data = _bare()
    settings: dict[str, Any] = {"cni_calico_tor_peers": TOR_1 if tor_peers is None else tor_peers,
                                "cni_calico_extra_peers": [CP_PEER] if extra is None else extra, **more}
    data["all"]["vars"].update(settings)
    return data


def _bgp(problems: list[str]) -> list[str]:
    return [p for p in problems if "cni_calico" in p]


# ---- the sample inventory -------------------------------------------------------------------------


def _sample_copy(tmp_path: Path, drop_extra: bool) -> Path:
    inv = tmp_path / "inv"
    shutil.copytree(SAMPLE_INVENTORY, inv)
    if drop_extra:
        addons = inv / "group_vars" / "all" / "addons.yml"
        data = yaml.safe_load(addons.read_text())
        data.pop("cni_calico_extra_peers", None)
        addons.write_text(yaml.safe_dump(data))
    return inv


def test_the_sample_without_an_extra_peer_is_refused_naming_the_control_planes(tmp_path: Path) -> None:
    result = check_inventory(_sample_copy(tmp_path, drop_extra=True), deploy=True)
    lines = [str(p) for p in result.problems]
    hits = [line for line in lines if "hosts cp[1:3]" in line]
    assert not result.valid and len(hits) == 1, lines
    assert "group_vars/all/addons.yml" in hits[0]
    assert "no cni_calico_extra_peers entry selects it" in hits[0]
    assert "has(node-role.kubernetes.io/control-plane)" in hits[0]  # the fix names a selector


def test_the_sample_as_shipped_passes(tmp_path: Path) -> None:
    result = check_inventory(_sample_copy(tmp_path, drop_extra=False), deploy=True)
    assert result.valid, [str(p) for p in result.problems]
    assert _bgp([str(w) for w in result.warnings]) == []


def test_only_the_check_before_a_deploy_applies_the_rule(tmp_path: Path) -> None:
    """A day-2 command (etcd status, certs check, health) reads the inventory without building the
    network: the peers are the deploy's concern (`ufcctl inventory check` and deploy apply them)."""
    inv = _sample_copy(tmp_path, drop_extra=True)
    assert check_inventory(inv).valid
    assert not check_inventory(inv, deploy=True).valid


# ---- the two rules --------------------------------------------------------------------------------


def test_peers_for_every_tor_and_the_control_planes_pass() -> None:
    assert check(_with()) == ([], [])


def test_a_tor_without_a_peer_is_refused_naming_hosts_and_tor() -> None:
    data = _with()
    children(data)["tor_2"] = {"hosts": {"npu4": {"npu_tor_id": "tor-2"}}}
    problems, _ = check(data)
    hits = _bgp(problems)
    assert len(hits) == 1, problems
    assert "host npu4: npu_tor_id 'tor-2' has no entry in cni_calico_tor_peers" in hits[0]
    assert "add tor-2: {ip: ..., as_number: ...}" in hits[0]


def test_a_missing_tor_peer_folds_its_hosts_into_one_line() -> None:
    problems, _ = check(_with(tor_peers={}))
    hits = _bgp(problems)
    assert len(hits) == 1 and "hosts npu[1:4]: npu_tor_id 'tor-1' has no entry" in hits[0], problems


def test_tor_ids_written_as_numbers_match_string_keys() -> None:
    data = _with(tor_peers={"7": {"ip": "192.0.2.7", "as_number": 65007}})
    children(data)["tor_1"]["vars"]["npu_tor_id"] = 7
    assert _bgp(check(data)[0]) == []


def test_control_planes_without_an_extra_peer_are_refused() -> None:
    problems, _ = check(_with(extra=[]))
    hits = _bgp(problems)
    assert len(hits) == 1, problems
    assert hits[0].startswith("hosts.yml: hosts cp[1:3]: control plane with no npu_tor_id (no ToR BGP peer)")


def _with_cpu_worker(extra: list[dict[str, Any]]) -> dict[str, Any]:
    data = _with(extra=extra)
    children(data)["kube_node"]["hosts"] = {"cpu1": {"ansible_host": "10.0.1.1"}}
    return data


def test_a_worker_without_a_tor_needs_a_peer_too() -> None:
    hits = _bgp(check(_with_cpu_worker([CP_PEER]))[0])
    assert len(hits) == 1 and "host cpu1: worker with no npu_tor_id" in hits[0], hits
    hostname_peer = {**CP_PEER, "name": "cpu1", "node_selector": "kubernetes.io/hostname == 'cpu1'"}
    assert _bgp(check(_with_cpu_worker([CP_PEER, hostname_peer]))[0]) == []


def test_hosts_outside_kubernetes_need_no_peer() -> None:
    data = _with()  # etcd_pods hosts e1..e3 run no kubelet
    children(data)["nfs_server"] = {"hosts": {"nfs1": {"ansible_host": "10.0.0.30"}}}
    assert _bgp(check(data)[0]) == []


def test_a_selector_ufcctl_cannot_evaluate_is_named() -> None:
    odd = {**CP_PEER, "node_selector": "!has(npu-tor-id)"}
    problems, _ = check(_with(extra=[odd]))
    hits = _bgp(problems)
    assert any("cni_calico_extra_peers 'spine-cp': node_selector '!has(npu-tor-id)' is not a selector form "
               "ufcctl evaluates" in h and "label in {'a', 'b'}" in h for h in hits), problems
    assert any("hosts cp[1:3]: control plane with no npu_tor_id" in h for h in hits), problems


def test_an_unevaluable_selector_beside_a_covering_one_is_a_warning() -> None:
    odd = {"name": "rr", "ip": "192.0.2.9", "as_number": 65100, "node_selector": "rack not in {'r1'}"}
    problems, warnings = check(_with(extra=[CP_PEER, odd]))
    assert _bgp(problems) == []
    assert any("cni_calico_extra_peers 'rr': node_selector" in w for w in warnings), warnings


@pytest.mark.parametrize("settings", [
    {"cni_calico_bgp_peering": "none"},
    {"cni_calico_bgp_peering": "{{ my_mode }}"},
], ids=["none", "templated"])
def test_none_mode_is_not_checked(settings: dict[str, Any]) -> None:
    data = _bare()
    data["all"]["vars"].update(settings)
    assert _bgp(check(data)[0]) == []


def test_an_unknown_mode_is_refused() -> None:
    problems, _ = check(_with(cni_calico_bgp_peering="mesh"))
    assert any("cni_calico_bgp_peering: 'mesh' is not tor or none" in p for p in problems), problems


def test_the_tor_mode_is_the_default() -> None:
    problems, _ = check(_bare())  # no cni_calico_* at all: the role's default, tor
    assert len(_bgp(problems)) == 2, problems


# ---- the selector evaluator -----------------------------------------------------------------------

CP_LABELS = {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/hostname": "cp1",
             "masterselector": "dls-master-node"}


@pytest.mark.parametrize(("selector", "expected"), [
    ("all()", True),
    ("has(node-role.kubernetes.io/control-plane)", True),
    ("has(npu-tor-id)", False),
    ("kubernetes.io/hostname == 'cp1'", True),
    ('kubernetes.io/hostname == "cp2"', False),
    ("masterselector != 'x'", True),
    ("npu-tor-id != 'tor-1'", False),  # a node without the label: not counted as covered
    ("masterselector != 'dls-master-node'", False),
    ("kubernetes.io/hostname in {'cp1', 'cp2'}", True),
    ("kubernetes.io/hostname in {'cp3'}", False),
    ("npu-tor-id in {'tor-1'}", False),
    ("has(masterselector) && kubernetes.io/hostname in {'cp1','cp2'}", True),
    ("  all()&&has(npu-tor-id) ", False),
])
def test_selector_forms(selector: str, expected: bool) -> None:
    from ufcctl.domain.inventory.bgp_peers import parse_selector, selects  # after the rules' tests

    terms = parse_selector(selector)
    assert terms is not None, selector
    assert selects(terms, CP_LABELS) is expected


@pytest.mark.parametrize("selector", [
    "", "!has(a)", "a not in {'x'}", "has(a) || has(b)", "(has(a))", "a == x", "a == 'x' &&",
    "a in {}", "has(a b)", "all", "a =~ 'x'",
])
def test_selectors_outside_the_supported_forms(selector: str) -> None:
    from ufcctl.domain.inventory.bgp_peers import parse_selector

    assert parse_selector(selector) is None
