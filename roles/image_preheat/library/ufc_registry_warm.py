#!/usr/bin/python
"""Warm one registry cache with one image: fetch its manifest and every blob through the cache."""

from __future__ import annotations

import hashlib
import ssl
import urllib.error
import urllib.request

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ufcctl_manifest import (
    ACCEPT,
    ManifestError,
    blobs,
    index_entries,
    is_index,
    parse,
    platform_digest,
)

DOCUMENTATION = r"""
module: ufc_registry_warm
short_description: Pull one image's manifest and blobs through a registry cache, keeping nothing
description:
  - Runs on a registry cache host against its own cache instance (registry HTTP API v2), so the
    cache fetches the image from its upstream and stores it; the bytes are streamed, hashed with
    sha256 against their digest and discarded.
  - An OCI index or Docker manifest list resolves to the linux/amd64 entry (or its only entry).
  - Whether the cache already held the image cannot be known from its API, so every fetch reports
    changed; bytes_fetched and the per-blob results say what was transferred. Check mode fetches
    nothing, not even the manifest.
options:
  url: {type: str, required: true, description: "Base URL of the cache instance, e.g. http://10.0.0.5:5001."}
  repository: {type: str, required: true, description: "Repository, e.g. library/busybox."}
  reference: {type: str, required: true, description: Tag or sha256 digest of the manifest.}
  platform: {type: str, default: linux/amd64, description: Platform chosen from an index.}
  ca_file: {type: str, default: "", description: CA bundle for an https cache; empty means the system's.}
  timeout: {type: int, default: 60, description: Seconds per HTTP read before the fetch fails.}
"""

CHUNK = 1 << 20


class WarmError(Exception):
    pass


def _open(url, accept, timeout, context):
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        return urllib.request.urlopen(request, timeout=timeout, context=context)  # noqa: S310 (http(s) only)
    except urllib.error.HTTPError as err:
        raise WarmError(f"GET {url}: HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        raise WarmError("GET {}: {}".format(url, getattr(err, "reason", err))) from None


def fetch_manifest(base, repository, reference, timeout=60, context=None):
    """(media type, digest, parsed body) of one manifest; a digest reference is verified."""
    url = f"{base}/v2/{repository}/manifests/{reference}"
    with _open(url, ACCEPT, timeout, context) as response:
        body = response.read()
        header_type = response.headers.get("Content-Type", "").split(";")[0].strip()
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    if reference.startswith("sha256:") and digest != reference:
        raise WarmError(f"manifest {repository}@{reference}: content hashes to {digest}")
    try:
        doc = parse(body)
    except ManifestError as err:
        raise WarmError(f"manifest {repository}:{reference} is {err}") from None
    return doc.get("mediaType") or header_type, digest, doc, len(body)


def choose_platform(index, platform):
    """The digest of the index entry for platform (os/arch), or of its only entry."""
    entries = index_entries(index)
    chosen = platform_digest(entries, platform)
    if chosen is None:
        raise WarmError(f"index has no {platform} entry among {len(entries)} manifests")
    return chosen


def fetch_blob(base, repository, digest, timeout=60, context=None):
    """Stream one blob, discard it, verify its sha256; returns the bytes read."""
    url = f"{base}/v2/{repository}/blobs/{digest}"
    hasher = hashlib.sha256()
    size = 0
    with _open(url, None, timeout, context) as response:
        while True:
            chunk = response.read(CHUNK)
            if not chunk:
                break
            hasher.update(chunk)
            size += len(chunk)
    got = "sha256:" + hasher.hexdigest()
    if got != digest:
        raise WarmError(f"blob {digest}: content hashes to {got} ({size} bytes)")
    return size


def warm(base, repository, reference, platform="linux/amd64", timeout=60, context=None):
    """Everything the module reports; raises WarmError on the first failure that stops the image."""
    base = base.rstrip("/")
    media, digest, doc, size = fetch_manifest(base, repository, reference, timeout, context)
    result = {"digest": digest, "media_type": media, "manifest_bytes": size, "blobs": [],
              "bytes_fetched": size}
    if is_index(doc, media):
        chosen = choose_platform(doc, platform)
        media, chosen_digest, doc, size = fetch_manifest(base, repository, chosen, timeout, context)
        result.update(platform_digest=chosen_digest, media_type=media)
        result["bytes_fetched"] += size
    failed = []
    for blob, expected in blobs(doc):
        try:
            got = fetch_blob(base, repository, blob, timeout, context)
        except WarmError as err:
            failed.append(str(err))
            result["blobs"].append({"digest": blob, "size": expected, "status": "failed", "error": str(err)})
            continue
        result["bytes_fetched"] += got
        result["blobs"].append({"digest": blob, "size": got, "status": "fetched"})
    result["image_bytes"] = sum(b["size"] or 0 for b in result["blobs"])
    if failed:
        raise WarmError("{} of {} blobs failed: {}".format(len(failed), len(result["blobs"]), failed[0]),
                        result)
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "repository": {"type": "str", "required": True},
            "reference": {"type": "str", "required": True},
            "platform": {"type": "str", "default": "linux/amd64"},
            "ca_file": {"type": "str", "default": ""},
            "timeout": {"type": "int", "default": 60},
        },
        supports_check_mode=True,
    )
    p = module.params
    https = p["url"].startswith("https")
    context = ssl.create_default_context(cafile=p["ca_file"] or None) if https else None
    image = "{}/{}:{}".format(p["url"], p["repository"], p["reference"])
    if module.check_mode:  # not even the manifest: a manifest GET makes a pull-through cache fetch it
        module.exit_json(changed=True, bytes_fetched=0, blobs=[], msg=f"{image}: would be fetched")
    try:
        result = warm(p["url"], p["repository"], p["reference"], p["platform"], p["timeout"], context)
    except WarmError as err:
        extra = err.args[1] if len(err.args) > 1 else {}
        module.fail_json(msg=f"{image}: {err.args[0]}", **extra)
    module.exit_json(changed=True, **result)


if __name__ == "__main__":
    main()
