"""LAB UPSTREAM REGISTRY: push a test image to a registry with the HTTP API v2 (urllib only).

Blobs go up as monolithic uploads (POST /v2/<name>/blobs/uploads/, then PUT <location>?digest=),
skipped when HEAD says the registry has them; the manifest last, under its tag.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from tests.lab_standins.upstream_registry.image import MANIFEST_TYPE, TestImage


class PushError(Exception):
    pass


@dataclass(frozen=True)
class PushResult:
    reference: str  # <host:port>/<name>:<tag> as a node pulls it
    digest: str  # the manifest's
    uploaded: int  # blobs sent
    skipped: int  # blobs the registry had


def _call(method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None,
          timeout: float = 60) -> tuple[int, dict[str, str]]:
    if not url.startswith(("http://", "https://")):
        raise PushError(f"{url}: not an http(s) URL")
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (scheme checked)
            response.read()
            return response.status, dict(response.headers.items())
    except urllib.error.HTTPError as err:
        if method == "HEAD" and err.code == 404:
            return 404, {}
        raise PushError(f"{method} {url}: HTTP {err.code} {err.read(300).decode(errors='replace')}") from None
    except (urllib.error.URLError, OSError) as err:
        raise PushError(f"{method} {url}: {getattr(err, 'reason', err)}") from None


def push_blob(base_url: str, name: str, data: bytes, digest: str, timeout: float = 60) -> bool:
    """Upload one blob unless present; True when it was sent."""
    base = base_url.rstrip("/")
    status, _ = _call("HEAD", f"{base}/v2/{name}/blobs/{digest}", timeout=timeout)
    if status == 200:
        return False
    status, headers = _call("POST", f"{base}/v2/{name}/blobs/uploads/", body=b"", timeout=timeout)
    location = headers.get("Location")
    if status != 202 or not location:
        raise PushError(f"POST {base}/v2/{name}/blobs/uploads/: HTTP {status} without an upload location")
    url = urllib.parse.urljoin(base + "/", location)
    url += ("&" if "?" in url else "?") + urllib.parse.urlencode({"digest": digest})
    status, _ = _call("PUT", url, body=data, timeout=timeout,
                      headers={"Content-Type": "application/octet-stream", "Content-Length": str(len(data))})
    if status != 201:
        raise PushError(f"PUT blob {digest}: HTTP {status}, expected 201")
    return True


def push_image(base_url: str, name: str, tag: str, image: TestImage, timeout: float = 60) -> PushResult:
    """Push config, layers and manifest of `image` as <name>:<tag> to the registry at base_url."""
    uploaded = skipped = 0
    for digest, data in image.blobs.items():
        if push_blob(base_url, name, data, digest, timeout):
            uploaded += 1
        else:
            skipped += 1
    base = base_url.rstrip("/")
    status, _ = _call("PUT", f"{base}/v2/{name}/manifests/{tag}", body=image.manifest, timeout=timeout,
                      headers={"Content-Type": MANIFEST_TYPE})
    if status != 201:
        raise PushError(f"PUT manifest {name}:{tag}: HTTP {status}, expected 201")
    host = urllib.parse.urlsplit(base).netloc
    return PushResult(f"{host}/{name}:{tag}", image.manifest_digest, uploaded, skipped)
