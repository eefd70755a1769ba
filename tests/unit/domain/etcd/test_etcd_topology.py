"""Clusters from inventory groups and the kube-apiserver --etcd-servers / --etcd-servers-overrides flags."""

from __future__ import annotations

from typing import Any

import pytest

from ufcctl.domain.etcd.topology import (
    WiringError,
    apiserver_etcd_flags,
    clusters_from_groups,
    etcd_clusters,
    parse_overrides,
    port_conflicts,
)
from ufcctl.domain.inventory.model import Host, Inventory

CP = ["cp1", "cp2", "cp3"]
HOSTVARS: dict[str, dict[str, Any]] = {h: {"ansible_host": f"10.0.0.{i}"} for i, h in enumerate(CP, 1)}


def _flags(groups: dict[str, list[str]], hostvars: dict[str, dict[str, Any]] | None = None) -> list[str]:
    return apiserver_etcd_flags(clusters_from_groups(groups, hostvars or HOSTVARS)).as_args()


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        pytest.param(
            {"etcd_core": CP, "etcd_events": CP, "etcd_pods": CP},
            [
                "--etcd-servers=https://10.0.0.1:2379,https://10.0.0.2:2379,https://10.0.0.3:2379",
                "--etcd-servers-overrides="
                "/events#https://10.0.0.1:2383;https://10.0.0.2:2383;https://10.0.0.3:2383,"
                "coordination.k8s.io/leases#https://10.0.0.1:2383;https://10.0.0.2:2383;https://10.0.0.3:2383,"
                "/pods#https://10.0.0.1:2385;https://10.0.0.2:2385;https://10.0.0.3:2385",
            ],
            id="three-clusters-shared-hosts-default-ports",
        ),
        pytest.param(
            {"etcd_core": CP},
            ["--etcd-servers=https://10.0.0.1:2379,https://10.0.0.2:2379,https://10.0.0.3:2379"],
            id="core-only-no-overrides-flag",
        ),
        pytest.param(
            {"etcd_core": ["cp1"], "etcd_pods": ["cp2", "cp3"]},
            [
                "--etcd-servers=https://10.0.0.1:2379",
                "--etcd-servers-overrides=/pods#https://10.0.0.2:2385;https://10.0.0.3:2385",
            ],
            id="pods-split-events-stay-in-core",
        ),
        pytest.param(
            {"etcd_core": ["cp1"], "etcd_events": ["cp2"], "etcd_pods": []},
            [
                "--etcd-servers=https://10.0.0.1:2379",
                "--etcd-servers-overrides=/events#https://10.0.0.2:2383,coordination.k8s.io/leases#https://10.0.0.2:2383",
            ],
            id="single-member-events-empty-pods-group",
        ),
    ],
)
def test_apiserver_flags(groups: dict[str, list[str]], expected: list[str]) -> None:
    assert _flags(groups) == expected


def test_separators_commas_between_overrides_semicolons_between_servers() -> None:
    flags = apiserver_etcd_flags(
        clusters_from_groups({"etcd_core": CP, "etcd_events": CP, "etcd_pods": CP}, HOSTVARS)
    )
    parsed = parse_overrides(flags.overrides)
    assert list(parsed) == ["/events", "coordination.k8s.io/leases", "/pods"]
    assert all(len(servers) == 3 for servers in parsed.values())
    assert ";" not in flags.servers and flags.servers.count(",") == 2


def test_port_and_address_overrides() -> None:
    hostvars = {
        "e1": {"ansible_host": "10.1.0.1", "etcd_address": "192.168.9.1", "etcd_events_client_port": 4001},
        "e2": {"ansible_host": "10.1.0.2", "etcd_events_client_port": 4001},
        "c1": {"etcd_address": "{{ ansible_default_ipv4.address }}"},  # unrendered: fall back
        "v6": {"ansible_host": "fd00::5"},
    }
    flags = _flags({"etcd_core": ["c1", "v6"], "etcd_events": ["e1", "e2"]}, hostvars)
    assert flags == [
        "--etcd-servers=https://c1:2379,https://[fd00::5]:2379",
        "--etcd-servers-overrides=/events#https://192.168.9.1:4001;https://10.1.0.2:4001,"
        "coordination.k8s.io/leases#https://192.168.9.1:4001;https://10.1.0.2:4001",
    ]


def test_no_core_cluster_is_an_error() -> None:
    with pytest.raises(WiringError, match="etcd_core has no hosts"):
        _flags({"etcd_events": CP})


@pytest.mark.parametrize(
    ("value", "error"),
    [
        pytest.param("/pods", "group/resource#servers", id="no-servers"),
        pytest.param("pods#https://a:2379", "group/resource#servers", id="no-slash"),
        pytest.param("/pods#https://a:2379#x", "group/resource#servers", id="two-hashes"),
        pytest.param("a/b/c#https://a:2379", "group/resource#servers", id="two-slashes"),
        pytest.param("/pods#a:2379", "http(s) URL", id="not-a-url"),
        pytest.param(
            "/pods#https://a:2379,https://b:2379", "group/resource#servers", id="commas-between-servers"
        ),
    ],
)
def test_parse_overrides_rejects_what_apiserver_rejects(value: str, error: str) -> None:
    with pytest.raises(WiringError, match=error.replace("(", r"\(").replace(")", r"\)")):
        parse_overrides(value)


def test_port_conflicts_on_shared_hosts() -> None:
    clean = clusters_from_groups({"etcd_core": CP, "etcd_events": CP, "etcd_pods": CP}, HOSTVARS)
    assert port_conflicts(clean) == []
    hostvars = {h: {**v, "etcd_pods_client_port": 2383} for h, v in HOSTVARS.items()}
    clashing = clusters_from_groups({"etcd_events": CP, "etcd_pods": ["cp1"]}, hostvars)
    assert port_conflicts(clashing) == ["host cp1: port 2383 used by events client and pods client"]


def test_from_inventory_model_uses_group_membership_with_children() -> None:
    def host(name: str, groups: set[str]) -> Host:
        return Host(name, {"ansible_host": f"10.2.0.{name[-1]}"}, frozenset(groups | {"all"}))

    inventory = Inventory(
        "inv",
        {
            "m1": host("m1", {"etcd_core", "etcd", "etcd_events"}),
            "m2": host("m2", {"etcd_core"}),
            "w1": host("w1", {"kube_node"}),
        },
        {},
    )
    clusters = etcd_clusters(inventory)
    assert [c.name for c in clusters] == ["core", "events"]
    assert clusters[0].client_urls == ("https://10.2.0.1:2379", "https://10.2.0.2:2379")
    assert clusters[1].members[0].peer_url == "https://10.2.0.1:2382"
