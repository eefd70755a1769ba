"""basic-tor-node-cm from inventory vars: the JSON Volcano reads, and every inconsistency named."""

from __future__ import annotations

import json

import pytest

from ufcctl.domain.addons.tor import (
    MAX_CONFIGMAP_DATA_BYTES,
    TorMapError,
    servers_from_hostvars,
    tor_configmap,
)

CHIPS = {"module-910b-8": 8, "module-a3-16-super-pod": 16}


def _host(ip: str, tor: object, slice_id: object, **extra: object) -> dict:
    return {
        "ansible_host": ip,
        "npu_tor_id": tor,
        "npu_slice_id": slice_id,
        "npu_accelerator_type": "module-910b-8",
        **extra,
    }


def _cm(hostvars: dict, tor_level: str = "", limit: int = MAX_CONFIGMAP_DATA_BYTES):
    servers, problems = servers_from_hostvars(list(hostvars), hostvars, CHIPS)
    if problems:
        raise TorMapError(problems)
    return tor_configmap(servers, tor_level, limit)


def test_format_volcano_reads() -> None:
    hostvars = {
        "a": _host("10.0.0.1", "tor-01", 0, npu_tor_ip="10.9.0.1"),
        "b": _host(
            "10.0.0.2", "tor-01", 1, npu_tor_ip="10.9.0.1", npu_accelerator_type="module-a3-16-super-pod"
        ),
        "c": _host("10.0.0.3", 7, "0", npu_count=4),
        "cpu": {"ansible_host": "10.0.0.9"},  # no npu_tor_id: not a ToR server
    }
    cm = _cm(hostvars, tor_level="single_layer")
    assert (
        cm.body["metadata"]["name"] == "basic-tor-node-cm"
        and cm.body["metadata"]["namespace"] == "kube-system"
    )
    assert cm.body["data"]["tor_level"] == "single_layer"
    assert json.loads(cm.body["data"]["tor_info"]) == {
        "version": "1.0",
        "tor_count": 2,
        "server_list": [
            {
                "tor_id": 1,
                "tor_ip": "10.9.0.1",
                "server": [
                    {"server_ip": "10.0.0.1", "npu_count": 8, "slice_id": 0},
                    {"server_ip": "10.0.0.2", "npu_count": 16, "slice_id": 1},
                ],
            },
            {"tor_id": 7, "tor_ip": "", "server": [{"server_ip": "10.0.0.3", "npu_count": 4, "slice_id": 0}]},
        ],
    }
    assert (cm.servers, cm.tors) == (3, 2)
    assert cm.data_bytes == sum(len(k) + len(v) for k, v in cm.body["data"].items())


@pytest.mark.parametrize(
    ("hostvars", "problem"),
    [
        pytest.param(
            {"a": _host("npu-a.example", "tor-1", 0)},
            "host a: server_ip 'npu-a.example' is not an IP address (set npu_node_ip)",
            id="dns-name",
        ),
        pytest.param(
            {"a": _host("10.0.0.1", "tor-1", -1)},
            "host a: npu_slice_id -1 must be an integer >= 0",
            id="negative-slice",
        ),
        pytest.param(
            {"a": _host("10.0.0.1", "tor-1", 0, npu_accelerator_type="gpu")},
            "host a: no NPU count for accelerator-type 'gpu' (set npu_count)",
            id="unknown-type",
        ),
        pytest.param(
            {"a": _host("10.0.0.1", "tor-x", 0)},
            "ToR 'tor-x': tor_id must be an integer; use an id ending in digits (tor-07)",
            id="id-no-digits",
        ),
        pytest.param(
            {"a": _host("10.0.0.1", "tor-01", 0), "b": _host("10.0.0.2", "rack1-tor-1", 0)},
            "ToR 'rack1-tor-1': its number 1 is also ToR 'tor-01''s",
            id="ids-clash",
        ),
        pytest.param(
            {"a": _host("10.0.0.1", "t1", 0), "b": _host("10.0.0.2", "t1", 0)},
            "host b: npu_slice_id 0 taken by a (ToR t1)",
            id="slice-twice",
        ),
        pytest.param(
            {"a": _host("10.0.0.1", "t1", 0), "b": _host("10.0.0.1", "t2", 0)},
            "host b: server_ip 10.0.0.1 is also a's",
            id="ip-twice",
        ),
        pytest.param(
            {
                "a": _host("10.0.0.1", "t1", 0, npu_tor_ip="1.1.1.1"),
                "b": _host("10.0.0.2", "t1", 1, npu_tor_ip="1.1.1.2"),
            },
            "ToR 't1': hosts disagree on npu_tor_ip (1.1.1.1, 1.1.1.2)",
            id="tor-ip-disagrees",
        ),
    ],
)
def test_inconsistent_inventory_named(hostvars: dict, problem: str) -> None:
    with pytest.raises(TorMapError) as err:
        _cm(hostvars)
    assert problem in err.value.problems


def test_over_the_limit_fails_with_the_size_and_is_not_split() -> None:
    hostvars = {f"n{i}": _host(f"10.0.{i // 256}.{i % 256}", f"tor-{i // 16}", i % 16) for i in range(64)}
    fits = _cm(hostvars)
    with pytest.raises(TorMapError) as err:
        _cm(hostvars, limit=fits.data_bytes - 1)
    (line,) = err.value.problems
    assert f"would hold {fits.data_bytes} bytes of data, over the {fits.data_bytes - 1}-byte" in line
    assert "cannot be split" in line
