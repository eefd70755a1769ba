"""Registry caches from the inventory: specs and their problems, each node's mirrors, pre-heat fill."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.role_templates import render
from ufcctl.domain.images.mirrors import (
    Cache,
    caches_used,
    expected_upstream_bytes,
    index_caches,
    index_from_table,
    index_table,
    node_mirrors,
    parse_caches,
    parse_upstreams,
    scheme_problems,
    uncached_nodes,
)
from ufcctl.domain.runtime.containerd import hosts_values, mirror_problems

UPSTREAMS = [
    {"name": "dockerhub", "registry": "docker.io", "url": "https://registry-1.docker.io", "port": 5000},
    {"name": "site", "registry": "10.1.2.3:5000", "url": "http://10.1.2.3:5000/", "port": 5001},
]


def _inventory(caches: dict[str, dict[str, Any]]) -> tuple[dict[str, list[str]], dict[str, dict[str, Any]]]:
    return {"registry_cache": list(caches)}, caches


def test_upstreams_parse_with_default_metrics_ports_and_trimmed_urls() -> None:
    upstreams, problems = parse_upstreams(UPSTREAMS)
    assert problems == []
    assert [(u.name, u.registry, u.url, u.port, u.metrics_port) for u in upstreams] == [
        ("dockerhub", "docker.io", "https://registry-1.docker.io", 5000, 15000),
        ("site", "10.1.2.3:5000", "http://10.1.2.3:5000", 5001, 15001),
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("docker.io", "expected a list"),
        (
            [
                {"name": "a", "registry": "docker.io", "url": "https://x", "port": 5000},
                {"name": "b", "registry": "quay.io", "url": "https://y", "port": 5000},
            ],
            "port 5000 is also used by upstream a",
        ),
        (
            [
                {"name": "a", "registry": "docker.io", "url": "https://x", "port": 5000},
                {"name": "b", "registry": "quay.io", "url": "https://y", "port": 15000},
            ],
            "port 15000 is also used by upstream a",
        ),
        (
            [{"name": "Bad_Name", "registry": "docker.io", "url": "https://x", "port": 5000}],
            "name 'Bad_Name'",
        ),
        (
            [{"name": "a", "registry": "https://docker.io", "url": "https://x", "port": 5000}],
            "must be host[:port]",
        ),
        ([{"name": "a", "registry": "docker.io", "url": "ftp://x", "port": 5000}], "url 'ftp://x'"),
        (
            [{"name": "a", "registry": "docker.io", "url": "https://x", "port": 70000}],
            "port 70000 must be a TCP port",
        ),
        (
            [
                {"name": "a", "registry": "docker.io", "url": "https://x", "port": 5000},
                {"name": "a", "registry": "quay.io", "url": "https://y", "port": 5001},
            ],
            "name 'a' is used twice",
        ),
        (
            [
                {"name": "a", "registry": "docker.io", "url": "https://x", "port": 5000},
                {"name": "b", "registry": "docker.io", "url": "https://y", "port": 5001},
            ],
            "registry docker.io has two",
        ),
        (["nope"], "expected a mapping"),
    ],
    ids=[
        "not-a-list",
        "duplicate-port",
        "port-is-a-metrics-port",
        "bad-name",
        "scheme-in-registry",
        "bad-url",
        "port-range",
        "duplicate-name",
        "duplicate-registry",
        "not-a-mapping",
    ],
)
def test_bad_upstreams_are_named_with_the_fix(raw: Any, expected: str) -> None:
    _, problems = parse_upstreams(raw)
    assert any(expected in p for p in problems), problems
    assert all("\n" not in p for p in problems)


def test_cache_specs_default_to_their_own_domain_and_tier() -> None:
    groups, hostvars = _inventory(
        {
            "c1": {"npu_tor_id": 7, "ansible_host": "10.0.0.1"},
            "c2": {"registry_cache_tier": "super_pod", "npu_super_pod_id": "3", "npu_tor_id": 9},
            "c3": {"registry_cache_serves": [1, 2], "registry_cache_address": "fd00::3"},
        }
    )
    caches, problems = parse_caches(groups, hostvars)
    assert problems == []
    assert caches == [
        Cache("c1", "10.0.0.1", "tor", ("7",)),
        Cache("c2", "c2", "super_pod", ("3",)),
        Cache("c3", "fd00::3", "tor", ("1", "2")),
    ]


@pytest.mark.parametrize(
    ("hv", "expected"),
    [
        (
            {"registry_cache_tier": "rack", "npu_tor_id": 1},
            "registry_cache_tier 'rack' is unknown; use one of tor, super_pod",
        ),
        ({"registry_cache_tier": "super_pod", "npu_tor_id": 1}, "serves nothing; set registry_cache_serves"),
        ({"registry_cache_serves": []}, "serves nothing"),
        ({"registry_cache_serves": {"a": 1}}, "registry_cache_serves must be a list of npu_tor_id values"),
    ],
    ids=["unknown-tier", "super-pod-cache-without-a-super-pod", "empty-serves", "serves-not-a-list"],
)
def test_bad_cache_specs_name_the_host(hv: dict[str, Any], expected: str) -> None:
    caches, problems = parse_caches(*_inventory({"cx": hv}))
    assert caches == [] and len(problems) == 1 and problems[0].startswith("host cx: ")
    assert expected in problems[0]


@pytest.mark.parametrize(
    ("scheme", "insecure", "ok"),
    [("https", False, True), ("http", True, True), ("http", False, False), ("ftp", True, False)],
)
def test_plain_http_only_when_insecure_is_explicit(scheme: str, insecure: bool, ok: bool) -> None:
    assert (scheme_problems(scheme, insecure) == []) is ok


def test_a_node_lists_its_tor_caches_then_its_super_pods_in_inventory_order() -> None:
    caches, _ = parse_caches(
        *_inventory(
            {
                "sp-a": {
                    "registry_cache_tier": "super_pod",
                    "npu_super_pod_id": 0,
                    "ansible_host": "10.9.0.1",
                },
                "tor-a": {"npu_tor_id": 4, "ansible_host": "10.0.4.1"},
                "tor-b": {"registry_cache_serves": ["4", "5"], "ansible_host": "10.0.4.2"},
                "sp-b": {
                    "registry_cache_tier": "super_pod",
                    "registry_cache_serves": [0],
                    "ansible_host": "fd00::9",
                },
            }
        )
    )
    upstreams, _ = parse_upstreams(UPSTREAMS)
    mirrors = node_mirrors(
        {"npu_tor_id": 4, "npu_super_pod_id": "0"}, index_caches(caches), upstreams, "https"
    )
    assert mirrors == {
        "docker.io": [
            {"url": u, "capabilities": ["pull", "resolve"]}
            for u in (
                "https://10.0.4.1:5000",
                "https://10.0.4.2:5000",
                "https://10.9.0.1:5000",
                "https://[fd00::9]:5000",
            )
        ],
        "10.1.2.3:5000": [
            {"url": u, "capabilities": ["pull", "resolve"]}
            for u in (
                "https://10.0.4.1:5001",
                "https://10.0.4.2:5001",
                "https://10.9.0.1:5001",
                "https://[fd00::9]:5001",
            )
        ],
    }
    # what container_runtime does with it: accepted, and the upstream stays the fallback server
    assert mirror_problems(mirrors) == []
    text = render("container_runtime", "hosts.toml.j2",
                  {"__container_runtime_hosts": hosts_values("docker.io", mirrors["docker.io"])})
    assert text.startswith('server = "https://registry-1.docker.io"')
    assert text.index("10.0.4.1") < text.index("10.0.4.2") < text.index("10.9.0.1")


def test_a_node_no_cache_serves_gets_no_mirrors_and_counts_as_uncached() -> None:
    caches, _ = parse_caches(*_inventory({"c": {"npu_tor_id": 1}}))
    index = index_caches(caches)
    upstreams, _ = parse_upstreams(UPSTREAMS)
    assert node_mirrors({"npu_tor_id": 2, "npu_super_pod_id": 0}, index, upstreams) == {}
    assert node_mirrors({}, index, upstreams) == {}
    assert uncached_nodes({"n1": {"npu_tor_id": 1}, "n2": {"npu_tor_id": 2}}, index) == ["n2"]


def test_a_cache_host_lists_itself_first() -> None:
    caches, _ = parse_caches(
        *_inventory(
            {
                "c1": {"npu_tor_id": 1, "npu_super_pod_id": 0, "ansible_host": "10.0.0.1"},
                "s1": {"registry_cache_tier": "super_pod", "npu_super_pod_id": 0, "ansible_host": "10.0.0.9"},
            }
        )
    )
    upstreams, _ = parse_upstreams(UPSTREAMS[:1])
    mirrors = node_mirrors({"npu_tor_id": 1, "npu_super_pod_id": 0}, index_caches(caches), upstreams, "http")
    assert [m["url"] for m in mirrors["docker.io"]] == ["http://10.0.0.1:5000", "http://10.0.0.9:5000"]


def _fleet() -> tuple[dict[str, list[str]], dict[str, dict[str, Any]], list[str]]:
    """16,000 nodes: 2,000 ToRs of 8 nodes, 125 super pods of 16 ToRs; a cache per ToR and per super pod."""
    hostvars: dict[str, dict[str, Any]] = {}
    nodes = []
    for i in range(16_000):
        name = f"node{i:05d}"
        hostvars[name] = {
            "npu_tor_id": i // 8,
            "npu_super_pod_id": i // 128,
            "ansible_host": f"10.{i // 65536}.{i // 256 % 256}.{i % 256}",
        }
        nodes.append(name)
    caches = [f"cache-tor{t:04d}" for t in range(2_000)] + [f"cache-sp{s:03d}" for s in range(125)]
    for t in range(2_000):
        hostvars[f"cache-tor{t:04d}"] = {
            "npu_tor_id": t,
            "npu_super_pod_id": t // 16,
            "ansible_host": f"10.200.{t // 256}.{t % 256}",
        }
    for s in range(125):
        hostvars[f"cache-sp{s:03d}"] = {
            "registry_cache_tier": "super_pod",
            "npu_super_pod_id": s,
            "ansible_host": f"10.201.0.{s}",
        }
    return {"registry_cache": caches, "kube_node": nodes}, hostvars, nodes


def test_mirrors_for_a_16000_node_inventory_in_one_pass() -> None:
    groups, hostvars, nodes = _fleet()
    caches, problems = parse_caches(groups, hostvars)
    assert problems == [] and len(caches) == 2_125
    index = index_caches(caches)
    upstreams, _ = parse_upstreams(UPSTREAMS)
    every = {n: node_mirrors(hostvars[n], index, upstreams) for n in nodes}
    assert len(every) == 16_000
    # node 1234: ToR 154, super pod 9
    assert [m["url"] for m in every["node01234"]["docker.io"]] == [
        "https://10.200.0.154:5000",
        "https://10.201.0.9:5000",
    ]
    assert all(len(m["docker.io"]) == 2 and len(m["10.1.2.3:5000"]) == 2 for m in every.values())
    assert uncached_nodes({n: hostvars[n] for n in nodes}, index) == []


def test_a_preheat_fills_each_used_cache_once_from_the_upstream() -> None:
    groups, hostvars, nodes = _fleet()
    index = index_caches(parse_caches(groups, hostvars)[0])
    # the first two super pods: 256 nodes, 32 ToR caches and 2 super-pod caches
    used = caches_used((hostvars[n] for n in nodes[:256]), index)
    assert len(used) == 34 and len({c.host for c in used}) == 34
    assert expected_upstream_bytes(20 * 2**30, used) == 34 * 20 * 2**30
    assert caches_used([], index) == [] and expected_upstream_bytes(10, []) == 0


def test_the_index_as_an_inventory_var_gives_the_same_mirrors() -> None:
    groups, hostvars, nodes = _fleet()
    index = index_caches(parse_caches(groups, hostvars)[0])
    table = index_table(index)
    assert table["tor/154"] == ["10.200.0.154"] and table["super_pod/9"] == ["10.201.0.9"]
    again, problems = index_from_table(table)
    assert problems == []
    upstreams, _ = parse_upstreams(UPSTREAMS)
    for node in nodes[::997]:
        expected = node_mirrors(hostvars[node], index, upstreams)
        assert node_mirrors(hostvars[node], again, upstreams) == expected


@pytest.mark.parametrize("table", ["x", {"rack/1": ["a"]}, {"tor/1": "a"}, {"tor": ["a"]}],
                         ids=["not-a-mapping", "unknown-tier", "addresses-not-a-list", "no-id"])
def test_a_bad_index_var_is_a_problem(table: Any) -> None:
    assert index_from_table(table)[1][0].startswith("registry_cache_index: ")
