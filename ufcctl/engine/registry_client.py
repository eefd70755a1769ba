"""Read an image's size from a registry's HTTP API v2 on the controller (manifests only, no blobs).

Used by `ufcctl images preheat --dry-run` for the expected upstream traffic: anonymous GETs of the
manifest (an OCI index or Docker manifest list resolves to one platform); no blob is downloaded and
no node is contacted. A registry that wants a token, is unreachable or answers nonsense gives no
size, with the reason.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

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
    if not url.startswith(("http://", "https://")):
        raise RegistryError(f"{url}: not an http(s) URL")
    request = urllib.request.Request(url, headers={"Accept": ", ".join(MANIFEST_TYPES)})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (scheme checked)
            body = response.read(MAX_MANIFEST + 1)
    except urllib.error.HTTPError as err:
        raise RegistryError(f"GET {url}: HTTP {err.code}") from None
    except (urllib.error.URLError, OSError) as err:
        raise RegistryError(f"GET {url}: {getattr(err, 'reason', err)}") from None
    if len(body) > MAX_MANIFEST:
        raise RegistryError(f"GET {url}: manifest over {MAX_MANIFEST} bytes")
    try:
        doc = json.loads(body)
    except ValueError:
        raise RegistryError(f"GET {url}: not JSON") from None
    if not isinstance(doc, dict):
        raise RegistryError(f"GET {url}: not a JSON object")
    return doc


def image_size(base: str, repository: str, reference: str, *, platform: str = "linux/amd64",
               timeout: float = 5.0) -> tuple[int | None, str]:
    """(bytes of config + layers for one platform, or None; why not, when None)."""
    try:
        doc = _manifest(base, repository, reference, timeout)
        if "manifests" in doc:
            entries = [m for m in doc["manifests"] if isinstance(m, dict) and m.get("digest")]
            os_name, _, arch = platform.partition("/")
            chosen = [m for m in entries if (m.get("platform") or {}).get("os") == os_name
                      and (m.get("platform") or {}).get("architecture") == arch]
            chosen = chosen or (entries if len(entries) == 1 else [])
            if not chosen:
                return None, f"index has no {platform} entry"
            doc = _manifest(base, repository, str(chosen[0]["digest"]), timeout)
        parts: list[Any] = [doc.get("config"), *(doc.get("layers") or [])]
        sizes: list[int] = [p["size"] for p in parts
                            if isinstance(p, dict) and isinstance(p.get("size"), int)]
        if len(sizes) != len(parts) or any(s < 0 for s in sizes):
            return None, "manifest lists no sizes"
        return sum(sizes), ""
    except RegistryError as err:
        return None, str(err)
