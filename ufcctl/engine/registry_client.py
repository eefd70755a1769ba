"""Read an image's size from a registry's HTTP API v2 on the controller (manifests only, no blobs).

Used by `ufcctl images preheat --dry-run` for the expected upstream traffic: anonymous GETs of the
manifest (an OCI index or Docker manifest list resolves to one platform); no blob is downloaded and
no node is contacted. A registry that wants a token, is unreachable or answers nonsense gives no
size, with the reason.
"""

from __future__ import annotations

import json
from typing import Any

from ufcctl.domain.urls import mask
from ufcctl.engine.http_get import HttpError, request

MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
MAX_MANIFEST = 4 << 20


class RegistryError(Exception):
    pass


def _manifest(base: str, repository: str, reference: str, timeout: float) -> dict[str, Any]:
    url = f"{base.rstrip('/')}/v2/{repository}/manifests/{reference}"
    try:  # one deadline for the whole GET, the answer capped (engine/http_get.py)
        answer = request(url, deadline=timeout, max_bytes=MAX_MANIFEST,
                         headers={"Accept": ", ".join(MANIFEST_TYPES)})
    except HttpError as err:
        raise RegistryError(f"GET {err}") from None
    if answer.status >= 400:
        raise RegistryError(f"GET {mask(url)}: HTTP {answer.status}")
    body = answer.body
    try:
        doc = json.loads(body)
    except ValueError:
        raise RegistryError(f"GET {mask(url)}: not JSON") from None
    if not isinstance(doc, dict):
        raise RegistryError(f"GET {mask(url)}: not a JSON object")
    return doc


def image_size(base: str, repository: str, reference: str, *, platform: str = "linux/amd64",
               timeout: float = 5.0) -> tuple[int | None, str]:
    """(bytes of config + layers for one platform, or None; why not, when None)."""
    try:
        doc = _manifest(base, repository, reference, timeout)
        if "manifests" in doc:
            listed = doc["manifests"] if isinstance(doc["manifests"], list) else []
            entries = [m for m in listed if isinstance(m, dict) and isinstance(m.get("digest"), str)]
            os_name, _, arch = platform.partition("/")
            chosen = [m for m in entries if isinstance(m.get("platform"), dict)
                      and m["platform"].get("os") == os_name and m["platform"].get("architecture") == arch]
            chosen = chosen or (entries if len(entries) == 1 else [])
            if not chosen:
                return None, f"index has no {platform} entry"
            doc = _manifest(base, repository, str(chosen[0]["digest"]), timeout)
        layers = doc.get("layers") or []
        parts: list[Any] = [doc.get("config"), *(layers if isinstance(layers, list) else [None])]
        sizes: list[int] = [p["size"] for p in parts
                            if isinstance(p, dict) and isinstance(p.get("size"), int)]
        if len(sizes) != len(parts) or any(s < 0 for s in sizes):
            return None, "manifest lists no sizes"
        return sum(sizes), ""
    except RegistryError as err:
        return None, str(err)
