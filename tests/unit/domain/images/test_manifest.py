"""ufcctl/domain/images/manifest.py: the one manifest walk of the controller (registry_client) and the
nodes (ufc_registry_warm, through roles/ufc_common/module_utils/ufcctl_manifest.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ufcctl.domain.images import manifest

AMD = {"digest": "sha256:a", "platform": {"os": "linux", "architecture": "amd64"}}
ARM = {"digest": "sha256:b", "platform": {"os": "linux", "architecture": "arm64"}}


@pytest.mark.parametrize(("body", "error"), [
    (b"{", "not JSON"), (b"[1]", "not a JSON object"), (b'{"layers": []}', None),
])
def test_parse(body: bytes, error: str | None) -> None:
    if error is None:
        assert manifest.parse(body) == {"layers": []}
    else:
        with pytest.raises(manifest.ManifestError, match=error):
            manifest.parse(body)


@pytest.mark.parametrize(("listed", "digest"), [
    ([ARM, AMD], "sha256:a"),
    ([ARM], "sha256:b"),  # the only entry, whatever its platform
    ([ARM, {"digest": "sha256:c"}], None),
    ([{"platform": AMD["platform"]}, "x"], None),  # entries without a digest do not count
    ("not a list", None),
])
def test_the_platform_entry_of_an_index(listed: Any, digest: str | None) -> None:
    index = {"manifests": listed}
    assert manifest.is_index(index)
    assert manifest.platform_digest(manifest.index_entries(index), "linux/amd64") == digest


def test_blobs_and_their_total_size() -> None:
    doc = {"config": {"digest": "sha256:c", "size": 7},
           "layers": [{"digest": "sha256:l1", "size": 100}, {"digest": "sha256:l2"}]}
    assert manifest.blobs(doc) == [("sha256:c", 7), ("sha256:l1", 100), ("sha256:l2", None)]
    assert manifest.total_size(doc) is None  # a layer states no size
    doc["layers"][1]["size"] = 3
    assert manifest.total_size(doc) == 110
    assert not manifest.is_index(doc) and manifest.is_index({}, manifest.INDEX_TYPES[0])
    assert json.loads(json.dumps(manifest.ACCEPT)).count("application/") == 4
