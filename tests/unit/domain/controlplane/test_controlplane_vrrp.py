"""VRRP plan: priorities in group order, a track weight larger than the spread, peers, inventory checks."""

from __future__ import annotations

import pytest

from ufcctl.domain.controlplane.vrrp import plan_vrrp, vrrp_problems

HOSTS = ["cp1", "cp2", "cp3"]
ADDR = {"cp1": "10.0.0.11", "cp2": "10.0.0.12", "cp3": "10.0.0.13"}


@pytest.mark.parametrize(
    ("hosts", "top", "step", "priorities", "weight"),
    [
        pytest.param(HOSTS, 150, 10, [150, 140, 130], -21, id="three-hosts"),
        pytest.param(HOSTS[:1], 150, 10, [150], -1, id="one-host"),
        pytest.param(
            ["cp1", "cp2", "cp3", "cp4", "cp5"], 200, 1, [200, 199, 198, 197, 196], -5, id="five-step-1"
        ),
    ],
)
def test_priorities_fall_in_order_and_a_failing_holder_drops_below_all(hosts, top, step, priorities, weight):
    addresses = {h: f"10.0.0.{i}" for i, h in enumerate(hosts, 1)}
    plan = plan_vrrp(hosts, addresses, top, step)
    assert [p.priority for p in plan.peers] == priorities and plan.track_weight == weight
    # the holder with a failing check ends below the lowest healthy peer
    if len(hosts) > 1:
        assert priorities[0] + weight < min(priorities[1:])


def test_unicast_peers_are_every_other_address():
    plan = plan_vrrp(HOSTS, ADDR, 150, 10)
    assert plan.unicast_peers("cp2") == ["10.0.0.11", "10.0.0.13"]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        pytest.param({}, None, id="valid"),
        pytest.param({"vip": "10.0.0.12"}, "is the address of host cp2", id="vip-is-a-host"),
        pytest.param({"vip": "vip.example"}, "is not an IP address", id="vip-not-ip"),
        pytest.param({"router_id": 0}, "must be 1..255", id="router-id-0"),
        pytest.param({"auth_pass": "123456789"}, "1..8 characters", id="password-too-long"),
        pytest.param({"auth_pass": ""}, "1..8 characters", id="password-empty"),
        pytest.param({"top": 255}, "leave 1..254", id="priority-255"),
        pytest.param({"top": 15, "step": 10}, "leave 1..254", id="priorities-below-1"),
        pytest.param({"hosts": []}, "has no hosts", id="no-hosts"),
        pytest.param(
            {"addresses": {**ADDR, "cp3": "10.0.0.11"}}, "share the address", id="duplicate-address"
        ),
    ],
)
def test_problems(kwargs, fragment):
    args = {
        "hosts": HOSTS,
        "addresses": ADDR,
        "vip": "10.0.0.10",
        "router_id": 51,
        "auth_pass": "s3cret",
        "top": 150,
        "step": 10,
        **kwargs,
    }
    problems = vrrp_problems(
        args["hosts"],
        args["addresses"],
        args["vip"],
        args["router_id"],
        args["auth_pass"],
        args["top"],
        args["step"],
    )
    if fragment is None:
        assert problems == []
    else:
        assert any(fragment in p for p in problems), problems
