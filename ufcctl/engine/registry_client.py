"""Read an image's size from a registry's HTTP API v2 on the controller (manifests only, no blobs).

Used by `ufcctl images preheat --dry-run` for the expected upstream traffic: anonymous GETs of the
manifest (an OCI index or Docker manifest list resolves to one platform); no blob is downloaded and
no node is contacted. A registry that wants a token, is unreachable or answers nonsense gives no
size, with the reason.
"""

from __future__ import annotations

from typing import Any

from ufcctl.domain.images import manifest
from ufcctl.domain.urls import mask
from ufcctl.engine.http_get import HttpError, request

MAX_MANIFEST = 4 << 20


class RegistryError(Exception):
    pass


def _manifest(base: str, repository: str, reference: str, timeout: float) -> dict[str, Any]:
    url = f"{base.rstrip('/')}/v2/{repository}/manifests/{reference}"
    try:  # one deadline for the whole GET, the answer capped (engine/http_get.py)
        answer = request(url, deadline=timeout, max_bytes=MAX_MANIFEST,
                         headers={"Accept": manifest.ACCEPT})
    except HttpError as err:
        raise RegistryError(f"GET {err}") from None
    if answer.status >= 400:
        raise RegistryError(f"GET {mask(url)}: HTTP {answer.status}")
    try:
        return manifest.parse(answer.body)
    except manifest.ManifestError as err:
        raise RegistryError(f"GET {mask(url)}: {err}") from None


def image_size(base: str, repository: str, reference: str, *, platform: str = "linux/amd64",
               timeout: float = 5.0) -> tuple[int | None, str]:
    """(bytes of config + layers for one platform, or None; why not, when None)."""
    try:
        doc = _manifest(base, repository, reference, timeout)
        if manifest.is_index(doc):
            chosen = manifest.platform_digest(manifest.index_entries(doc), platform)
            if chosen is None:
                return None, f"index has no {platform} entry"
            doc = _manifest(base, repository, chosen, timeout)
        size = manifest.total_size(doc)
        return (None, "manifest lists no sizes") if size is None else (size, "")
    except RegistryError as err:
        return None, str(err)
