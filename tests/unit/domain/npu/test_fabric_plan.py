"""ufcctl/domain/npu/fabric_plan.py and its inventory rule: every chip of a 16,000-node inventory gets a
unique device IP inside its ToR's subnet, stable when nodes are added; overlaps, addresses outside the
subnet and a subnet that runs out are refused, naming the host and the chip."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from tests.unit.domain.test_inventory_validate import base, check, children
from ufcctl.app.inventory import check_inventory, load_inventory
from ufcctl.domain.inventory.model import NPU_NODE
from ufcctl.domain.npu import fabric_plan as fp

NODE = {"npu_accelerator_type": "module-910b-8", "npu_tor_id": "tor-1", "npu_slice_id": 0,
        "npu_fabric_subnet": "10.64.0.0/24"}


def plan(**over: Any) -> list[fp.ChipPlan]:
    return fp.host_plan("npu1", {**NODE, **over})


def test_the_rule_gives_the_gateway_then_slot_times_chips() -> None:
    chips = plan(npu_slice_id=2)
    assert [c.address for c in chips] == [f"10.64.0.{18 + i}" for i in range(8)]
    assert {(c.netmask, c.gateway, c.switch) for c in chips} == {("255.255.255.0", "10.64.0.1", "tor-1")}
    assert [c.port for c in chips] == [str(17 + i) for i in range(8)]
    assert [c.chip for c in chips] == list(range(8))


def test_port_format_gateway_and_explicit_addresses() -> None:
    chips = plan(npu_fabric_port_format="200GE1/0/{port}", npu_fabric_gateway="10.64.0.254")
    assert chips[0].port == "200GE1/0/1" and chips[7].port == "200GE1/0/8"
    assert chips[0].gateway == "10.64.0.254"
    ips = [f"10.64.0.{100 + i}" for i in range(8)]
    assert [c.address for c in plan(npu_device_ips=ips)] == ips


def test_no_plan_vars_no_plan() -> None:
    assert fp.host_plan("n", {"npu_accelerator_type": "module-910b-8", "npu_tor_id": "t"}) == []


@pytest.mark.parametrize(("over", "var", "words"), [
    ({"npu_slice_id": 31}, "npu_fabric_subnet", "chip 7 at npu_slice_id 31 would need 10.64.1.1, past "
                                                  "10.64.0.0/24's last usable address 10.64.0.254"),
    ({"npu_fabric_subnet": "10.64.0.1/24"}, "npu_fabric_subnet", "is not an IPv4 subnet"),
    ({"npu_fabric_subnet": "fd00::/64"}, "npu_fabric_subnet", "IPv6"),
    ({"npu_slice_id": None}, "npu_slice_id", "is not a whole number"),
    ({"npu_tor_id": ""}, "npu_tor_id", "no npu_tor_id"),
    ({"npu_accelerator_type": "gpu"}, "npu_accelerator_type", "chip count"),
    ({"npu_fabric_gateway": "10.65.0.1"}, "npu_fabric_gateway", "not a usable address of 10.64.0.0/24"),
    ({"npu_device_ips": ["10.64.0.9"]}, "npu_device_ips", "must list 8 addresses"),
    ({"npu_device_ips": [f"10.64.0.{9 + i}" for i in range(7)] + ["10.64.1.3"]}, "npu_device_ips",
     "chip 7: device IP 10.64.1.3 is outside npu_fabric_subnet 10.64.0.0/24"),
    ({"npu_fabric_subnet": "", "npu_device_ips": [f"10.64.0.{9 + i}" for i in range(8)]}, "npu_fabric_subnet",
     "npu_fabric_subnet is not"),
    ({"npu_fabric_port_format": "{rail}"}, "npu_fabric_port_format", "may use only {port}, {slot}"),
])
def test_bad_vars_name_the_host_and_the_var(over: dict[str, Any], var: str, words: str) -> None:
    with pytest.raises(fp.FabricPlanError) as err:
        plan(**over)
    assert err.value.var == var and words in str(err.value) and str(err.value).startswith("host npu1: ")


def test_the_last_slot_that_fits_is_accepted() -> None:
    assert plan(npu_slice_id=30)[-1].address == "10.64.0.249"  # 2 + 30*8 + 7


def test_clashes_name_both_chips() -> None:
    a = plan()
    b = fp.host_plan("npu2", {**NODE, "npu_tor_id": "tor-2"})  # same subnet and slot: same addresses
    c = fp.host_plan("npu3", {**NODE, "npu_fabric_subnet": "10.64.1.0/24"})  # same ToR and slot: same ports
    found = [str(x) for x in fp.clashes([("npu1", a), ("npu2", b), ("npu3", c)])]
    assert "chip 0: device IP 10.64.0.2 is also npu1 chip 0's" in found
    assert "chip 3: switch port tor-1 4 is also npu1 chip 3's" in found
    assert len(found) == 16
    gw = fp.host_plan("npu4", {**NODE, "npu_tor_id": "tor-4", "npu_fabric_gateway": "10.64.0.9"})
    assert [str(x) for x in fp.clashes([("npu1", a), ("npu4", gw)])][0] == (
        "chip 7: device IP 10.64.0.9 is also the gateway of npu4's")


def test_inventory_check_refuses_overlaps_and_warns_about_hosts_without_a_plan() -> None:
    data = base()
    children(data)["tor_1"]["vars"]["npu_fabric_subnet"] = "10.64.0.0/24"  # npu1..4 all slot 0
    problems, warnings = check(data)
    clash = "hosts npu[2:4]: chip 0: device IP 10.64.0.2 is also npu1 chip 0's"
    assert any(clash in p for p in problems), problems
    data = base()
    children(data)["npu_node"] = {}
    children(data)["kube_node"]["children"]["npu_node"]["hosts"] = {"npu[1:4]": None}
    children(data)["tor_1"] = {"hosts": {"npu1": {"npu_slice_id": 0}, "npu2": {"npu_slice_id": 1}},
                               "vars": {"npu_tor_id": "tor-1", "npu_fabric_subnet": "10.64.0.0/28"}}
    children(data)["tor_2"] = {"hosts": {"npu[3:4]": None}, "vars": {"npu_tor_id": "tor-2"}}
    problems, warnings = check(data)
    assert any("host npu2: chip 7 at npu_slice_id 1 would need 10.64.0.17" in p for p in problems), problems
    assert any("2 NPU nodes have no fabric plan (npu[3:4])" in w for w in warnings), warnings


def _addresses(inv_dir: Path) -> dict[tuple[str, int], str]:
    inv = load_inventory(inv_dir)
    return {(h, c.chip): c.address
            for h in inv.group_hosts(NPU_NODE) for c in fp.host_plan(h, inv.hosts[h].vars)}


def test_16000_nodes_unique_inside_their_subnets_and_stable_when_nodes_are_added(tmp_path: Path) -> None:
    shape = ClusterShape(npu_nodes=16000, accelerator_type="module-910b-8", fabric_prefix=24)
    inv = load_inventory(write_cluster_inventory(tmp_path / "a", shape))
    plans = [(h, fp.host_plan(h, inv.hosts[h].vars)) for h in inv.group_hosts(NPU_NODE)]
    assert fp.clashes(plans) == []
    flat = {(h, c.chip): c for h, chips in plans for c in chips}
    assert len(flat) == 16000 * 8 and len({c.address for c in flat.values()}) == 16000 * 8
    for (h, _), c in flat.items():
        net = ipaddress.ip_network(inv.hosts[h].vars["npu_fabric_subnet"])
        assert ipaddress.ip_address(c.address) in net and c.address != c.gateway
    bigger = _addresses(write_cluster_inventory(tmp_path / "b", ClusterShape(
        npu_nodes=16016, accelerator_type="module-910b-8", fabric_prefix=24)))
    assert all(bigger[k] == c.address for k, c in flat.items())


def test_a3_16_chips_need_a_23_per_tor_of_16(tmp_path: Path) -> None:
    small = ClusterShape(npu_nodes=32, fabric_prefix=24)  # 16 chips x 16 servers > 253 addresses
    problems, _ = _validate(write_cluster_inventory(tmp_path / "a", small))
    assert any("use a larger subnet" in p for p in problems)
    fits = ClusterShape(npu_nodes=32, fabric_prefix=23)
    problems, _ = _validate(write_cluster_inventory(tmp_path / "b", fits))
    assert problems == []


def _validate(inv_dir: Path) -> tuple[list[str], list[str]]:
    result = check_inventory(inv_dir)
    return [str(p) for p in result.problems], [str(w) for w in result.warnings]
