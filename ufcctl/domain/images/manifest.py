"""An image manifest as a registry's HTTP API v2 serves it: which media types to accept, an index's
entry for one platform, and the blobs (config, then layers) of an image manifest. Pure.

One implementation for both sides: `ufcctl images preheat --dry-run` sizes images with it on the
controller (engine/registry_client.py), and the nodes' ufc_registry_warm module walks the same
manifests with it: roles/ufc_common/module_utils/ufcctl_manifest.py is a symlink to this file, which
Ansible ships with the module as ansible.module_utils.ufcctl_manifest. So this file imports the
standard library only and keeps to the nodes' Python (3.10, Ubuntu jammy); tests/unit/test_layers.py
checks both.
"""

from __future__ import annotations

import json
from typing import Any

MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
INDEX_TYPES = (MANIFEST_TYPES[1], MANIFEST_TYPES[3])
ACCEPT = ", ".join(MANIFEST_TYPES)


class ManifestError(ValueError):
    """A manifest body that is not a JSON object (the message completes "<what> is ...")."""


def parse(body: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(body)
    except ValueError:
        raise ManifestError("not JSON") from None
    if not isinstance(doc, dict):
        raise ManifestError("not a JSON object")
    return doc


def is_index(doc: dict[str, Any], media_type: str = "") -> bool:
    """An OCI index or Docker manifest list (by its media type, or by having `manifests`)."""
    return media_type in INDEX_TYPES or "manifests" in doc


def index_entries(index: dict[str, Any]) -> list[dict[str, Any]]:
    """The index's entries that name a digest."""
    listed = index.get("manifests")
    return [m for m in listed if isinstance(m, dict) and isinstance(m.get("digest"), str) and m["digest"]] \
        if isinstance(listed, list) else []


def platform_digest(entries: list[dict[str, Any]], platform: str) -> str | None:
    """The digest of the entry for `platform` (os/arch), else of the only entry; None when neither."""
    os_name, _, arch = platform.partition("/")
    for entry in entries:
        plat = entry.get("platform")
        if isinstance(plat, dict) and plat.get("os") == os_name and plat.get("architecture") == arch:
            return str(entry["digest"])
    return str(entries[0]["digest"]) if len(entries) == 1 else None


def _parts(manifest: dict[str, Any]) -> list[Any]:
    layers = manifest.get("layers") or []
    return [manifest.get("config"), *(layers if isinstance(layers, list) else [None])]


def blobs(manifest: dict[str, Any]) -> list[tuple[str, int | None]]:
    """(digest, the size the manifest states or None) of the config, then each layer, that name a digest."""
    return [(str(p["digest"]), p["size"] if isinstance(p.get("size"), int) else None)
            for p in _parts(manifest) if isinstance(p, dict) and p.get("digest")]


def total_size(manifest: dict[str, Any]) -> int | None:
    """Bytes of config + layers as the manifest states them; None when a part states no size."""
    parts = _parts(manifest)
    sizes = [p["size"] for p in parts if isinstance(p, dict) and isinstance(p.get("size"), int)]
    if len(sizes) != len(parts) or any(s < 0 for s in sizes):
        return None
    return sum(sizes)
