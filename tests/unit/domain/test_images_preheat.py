"""ufcctl/domain/images/preheat.py: image references, which caches serve which nodes, traffic."""

from __future__ import annotations

import pytest

from ufcctl.domain.images.preheat import (
    ImageRef,
    human_bytes,
    parse_image,
    serves,
    serving_caches,
    traffic,
    upstreams,
)

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(("text", "expected"), [
    ("busybox", ImageRef("docker.io", "library/busybox", None, None)),
    ("team/app:1.0", ImageRef("docker.io", "team/app", "1.0", None)),
    ("10.0.0.5:5000/lab/app:v1", ImageRef("10.0.0.5:5000", "lab/app", "v1", None)),
    (f"reg.example/app:v1@{DIGEST}", ImageRef("reg.example", "app", "v1", DIGEST)),
    (f"localhost/app@{DIGEST}", ImageRef("localhost", "app", None, DIGEST)),
])
def test_references_parse_and_qualify(text: str, expected: ImageRef) -> None:
    assert parse_image(text) == expected


def test_qualified_names_are_what_ctr_pulls() -> None:
    assert str(parse_image("busybox")) == "docker.io/library/busybox:latest"
    assert str(parse_image(f"reg.example/app@{DIGEST}")) == f"reg.example/app@{DIGEST}"
    assert parse_image(f"reg.example/app:v1@{DIGEST}").reference == DIGEST
    assert parse_image("reg.example/app:v1").reference == "v1"


@pytest.mark.parametrize("text", ["", "Busybox", "app:", "app@sha256:12", "a b", " app", "reg.example/",
                                  "x" * 300])
def test_bad_references_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_image(text)


def test_caches_serve_their_tor_their_super_pod_or_everyone() -> None:
    node = {"npu_tor_id": "tor-1", "npu_super_pod_id": 0}
    assert serves({"npu_tor_id": "tor-1"}, node)
    assert not serves({"npu_tor_id": "tor-2", "npu_super_pod_id": 0}, node)  # a ToR cache: its ToR only
    assert serves({"npu_super_pod_id": 0}, node) and not serves({"npu_super_pod_id": 1}, node)
    assert serves({}, node)
    caches = {"c-tor1": {"npu_tor_id": "tor-1"}, "c-tor9": {"npu_tor_id": "tor-9"},
              "c-sp0": {"npu_super_pod_id": 0}}
    assert serving_caches(caches, [node]) == ["c-tor1", "c-sp0"]


def test_upstreams_are_checked() -> None:
    found = upstreams([{"name": "lab", "registry": "10.0.0.5:5000", "url": "http://10.0.0.5:5000/",
                        "port": "5001"}])
    assert found[0].url == "http://10.0.0.5:5000" and found[0].port == 5001
    assert upstreams(None) == []
    with pytest.raises(ValueError, match=r"registry_cache_upstreams\[0\] needs"):
        upstreams([{"name": "lab"}])


def test_traffic_is_per_cache_or_per_node() -> None:
    assert traffic("i", 100, True, 3, 40).total == 300
    assert traffic("i", 100, False, 3, 40).total == 4000
    assert traffic("i", 100, True, 0, 40).via == "nodes"
    assert traffic("i", None, True, 3, 40).total is None
    assert human_bytes(25174911 * 2) == "48.0 MiB" and human_bytes(None) == "unknown size"
