"""ufcctl/domain/images/preheat.py: image references and the expected upstream traffic."""

from __future__ import annotations

import pytest

from ufcctl.domain.images.preheat import ImageRef, parse_image, traffic

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


def test_traffic_is_per_cache_or_per_node() -> None:
    assert traffic("i", 100, True, 3, 40).total == 300
    assert traffic("i", 100, False, 3, 40).total == 4000
    assert traffic("i", 100, True, 0, 40).via == "nodes"
    assert traffic("i", None, True, 3, 40).total is None
