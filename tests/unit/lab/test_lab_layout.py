"""Lab layout: address plan, subnet checks, names, MACs and the ToR / super pod spread."""

from __future__ import annotations

import ipaddress
from collections import Counter, defaultdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ufcctl.errors import InputError
from ufcctl.lab.layout import (
    ROLE_CONTROL_PLANE,
    ROLE_WORKER,
    check_lab_name,
    mac_for_ip,
    max_workers,
    network_name,
    parse_subnet,
    plan_layout,
    spread_topology,
)


@pytest.mark.parametrize(
    ("subnet", "workers", "cps", "first_worker", "last_worker", "vip", "gateway"),
    [
        ("10.89.64.0/24", 6, ["10.89.64.11", "10.89.64.12", "10.89.64.13"], "10.89.64.21", "10.89.64.26",
         "10.89.64.250", "10.89.64.1"),
        ("10.89.64.0/24", 229, ["10.89.64.11", "10.89.64.12", "10.89.64.13"], "10.89.64.21", "10.89.64.249",
         "10.89.64.250", "10.89.64.1"),
        ("172.20.0.0/16", 300, ["172.20.0.11", "172.20.0.12", "172.20.0.13"], "172.20.0.21", "172.20.1.64",
         "172.20.255.250", "172.20.0.1"),
        ("192.168.7.32/27", 5, ["192.168.7.43", "192.168.7.44", "192.168.7.45"], "192.168.7.53",
         "192.168.7.57", "192.168.7.58", "192.168.7.33"),
    ],
    ids=["default-24", "full-24", "big-16", "smallest-27"],
)
def test_address_plan(subnet, workers, cps, first_worker, last_worker, vip, gateway) -> None:
    layout = plan_layout("ufc", workers, subnet)
    assert [n.ip for n in layout.control_planes] == cps
    assert layout.workers[0].ip == first_worker
    assert layout.workers[-1].ip == last_worker
    assert (layout.vip, layout.gateway) == (vip, gateway)
    ips = [n.ip for n in layout.nodes]
    assert len(set(ips)) == len(ips)
    assert layout.vip not in ips and layout.gateway not in ips
    net = ipaddress.ip_network(subnet)
    assert all(ipaddress.ip_address(ip) in net for ip in [*ips, layout.vip])


def test_names_roles_and_nfs_server() -> None:
    layout = plan_layout("t42", 3, "10.89.70.0/24")
    names = ["t42-cp1", "t42-cp2", "t42-cp3", "t42-w01", "t42-w02", "t42-w03"]
    assert [n.name for n in layout.nodes] == names
    assert [n.role for n in layout.nodes] == [ROLE_CONTROL_PLANE] * 3 + [ROLE_WORKER] * 3
    assert layout.network == "ufcctl-lab-t42"
    assert layout.nfs_server == "t42-cp1"
    assert all(n.topology is None for n in layout.control_planes)
    assert all(n.topology is not None for n in layout.workers)


def test_default_lab_uses_the_plain_network_name() -> None:
    assert network_name("ufc") == "ufcctl-lab"
    assert plan_layout().network == "ufcctl-lab"


def test_worker_names_keep_their_number_when_the_lab_grows() -> None:
    small = [n.name for n in plan_layout("ufc", 9, "10.89.64.0/24").workers]
    large = [n.name for n in plan_layout("ufc", 120, "10.89.64.0/24").workers]
    assert large[:9] == small
    assert large[99] == "ufc-w100"


@pytest.mark.parametrize(
    ("subnet", "message"),
    [
        ("8.8.8.0/24", "not a private range"),
        ("10.89.64.5/24", "has host bits set"),
        ("fd00::/64", "only IPv4"),
        ("10.89.64.0/28", "too small"),
        ("not-a-net", "does not appear to be"),
    ],
    ids=["public", "host-bits", "ipv6", "too-small", "garbage"],
)
def test_bad_subnets_are_input_errors(subnet: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_subnet(subnet)
    assert message in err.value.message
    assert subnet in err.value.message


@pytest.mark.parametrize(
    ("subnet", "workers", "fits"),
    [("10.89.64.0/24", 229, True), ("10.89.64.0/24", 230, False), ("10.89.64.0/27", 5, True),
     ("10.89.64.0/27", 6, False), ("10.89.64.0/23", 485, True)],
    ids=["24-max", "24-over", "27-max", "27-over", "23-max"],
)
def test_worker_capacity(subnet: str, workers: int, fits: bool) -> None:
    assert (workers <= max_workers(parse_subnet(subnet))) is fits
    if fits:
        assert len(plan_layout("ufc", workers, subnet).workers) == workers
    else:
        with pytest.raises(InputError, match="does not fit"):
            plan_layout("ufc", workers, subnet)


def test_zero_workers_is_an_input_error() -> None:
    with pytest.raises(InputError, match="at least one worker"):
        plan_layout("ufc", 0)


@pytest.mark.parametrize("name", ["ufc", "t1", "lab12345abcd"], ids=["default", "short", "max-length"])
def test_good_lab_names(name: str) -> None:
    assert check_lab_name(name) == name


@pytest.mark.parametrize("name", ["", "Ufc", "1lab", "a-b", "a_b", "lab123456789x"],
                         ids=["empty", "upper", "digit-first", "dash", "underscore", "too-long"])
def test_bad_lab_names(name: str) -> None:
    with pytest.raises(InputError, match="lab name"):
        check_lab_name(name)


def test_mac_is_fixed_unicast_locally_administered_and_unique() -> None:
    ips = [n.ip for n in plan_layout("ufc", 229).nodes]
    macs = [mac_for_ip(ip) for ip in ips]
    assert macs == [mac_for_ip(ip) for ip in ips]
    assert len(set(macs)) == len(macs)
    first_octet = int(macs[0].split(":")[0], 16)
    assert first_octet & 0b10 and not first_octet & 0b01
    assert mac_for_ip("10.89.64.23") == "02:fc:0a:59:40:17"


@pytest.mark.parametrize(
    ("workers", "per_tor", "tors_per_sp", "tors", "super_pods"),
    [
        (1, 2, 2, 1, 1),
        (2, 2, 2, 2, 2),
        (3, 2, 2, 2, 2),
        (6, 2, 2, 3, 2),
        (8, 2, 2, 4, 2),
        (40, 2, 2, 20, 10),
        (40, 4, 4, 10, 3),
        (6, 16, 4, 2, 2),
    ],
    ids=["one", "two", "three", "default-six", "eight", "forty", "forty-wide", "six-big-tors"],
)
def test_spread_counts(workers, per_tor, tors_per_sp, tors, super_pods) -> None:
    topo = spread_topology(workers, per_tor, tors_per_sp)
    assert len({t.tor_id for t in topo}) == tors
    assert len({t.super_pod_id for t in topo}) == super_pods


def test_default_six_workers() -> None:
    topo = spread_topology(6)
    assert [(t.tor_id, t.super_pod_id, t.slice_id, t.rack) for t in topo] == [
        (0, 0, 0, "rack-01"), (0, 0, 1, "rack-01"),
        (1, 0, 0, "rack-02"), (1, 0, 1, "rack-02"),
        (2, 1, 0, "rack-03"), (2, 1, 1, "rack-03"),
    ]
    assert {t.accelerator_type for t in topo} == {"module-910b-8"}


@given(st.integers(0, 300), st.integers(1, 20), st.integers(1, 8))
def test_spread_properties(workers: int, per_tor: int, tors_per_sp: int) -> None:
    topo = spread_topology(workers, per_tor, tors_per_sp)
    assert len(topo) == workers
    tor_ids = [t.tor_id for t in topo]
    assert tor_ids == sorted(tor_ids), "ToRs are contiguous blocks in worker order"
    sizes = Counter(tor_ids).values()
    if sizes:
        assert max(sizes) - min(sizes) <= 1, "blocks are balanced"
    if workers >= 2:
        assert len(set(tor_ids)) >= 2 and len({t.super_pod_id for t in topo}) >= 2
    pods_of_tor: dict[int, set[int]] = defaultdict(set)
    slices: dict[int, list[int]] = defaultdict(list)
    for t in topo:
        pods_of_tor[t.tor_id].add(t.super_pod_id)
        slices[t.tor_id].append(t.slice_id)
        assert t.rack == f"rack-{t.tor_id + 1:02d}"
    assert all(len(p) == 1 for p in pods_of_tor.values()), "a ToR never spans two super pods"
    assert all(s == list(range(len(s))) for s in slices.values()), "slice = position under the ToR"
