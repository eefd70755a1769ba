"""roles/image_preheat's modules: ufc_registry_warm against a loopback stand-in registry (manifest,
index, blobs, a corrupted blob), and ufc_ctr_image's reading of `ctr images ls`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.pyimports import load_file
from tests.helpers.registry_standin import Standin, serve
from tests.lab_standins.upstream_registry.image import build_image, digest_of

ROOT = Path(__file__).resolve().parents[3]
warm = load_file(ROOT / "roles" / "image_preheat" / "library" / "ufc_registry_warm.py")
ctr = load_file(ROOT / "roles" / "image_preheat" / "library" / "ufc_ctr_image.py")
IMAGE = build_image(seed=3, layers=3, layer_bytes=256 * 1024)
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"


def _index(*platforms: tuple[str, str, bytes]) -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest_of(body),
         "size": len(body), "platform": {"os": os_name, "architecture": arch}}
        for os_name, arch, body in platforms]}).encode()


def test_fetches_manifest_and_every_blob_and_verifies_them() -> None:
    standin = Standin()
    standin.add_image("lab/app", "v1", IMAGE)
    with serve(standin):
        result = warm.warm(standin.url, "lab/app", "v1")
    assert result["digest"] == IMAGE.manifest_digest
    assert [b["status"] for b in result["blobs"]] == ["fetched"] * 4
    assert result["image_bytes"] == IMAGE.size
    assert result["bytes_fetched"] == IMAGE.size + len(IMAGE.manifest)
    accepts = standin.blob_gets()
    assert accepts == 4


def test_an_index_resolves_to_linux_amd64() -> None:
    other = build_image(seed=4, layers=1, layer_bytes=1024)
    index = _index(("linux", "arm64", other.manifest), ("linux", "amd64", IMAGE.manifest))
    standin = Standin()
    standin.add_image("lab/app", None, IMAGE)
    standin.add_manifest("lab/app", None, other.manifest, "application/vnd.oci.image.manifest.v1+json")
    standin.add_manifest("lab/app", "multi", index, INDEX_TYPE)
    with serve(standin):
        result = warm.warm(standin.url, "lab/app", "multi")
    assert result["digest"] == digest_of(index)
    assert result["platform_digest"] == IMAGE.manifest_digest
    assert {b["digest"] for b in result["blobs"]} == set(IMAGE.blobs)


def test_an_index_without_the_platform_and_several_entries_fails() -> None:
    a, b = build_image(seed=5, layers=1, layer_bytes=1024), build_image(seed=6, layers=1, layer_bytes=1024)
    with pytest.raises(warm.WarmError, match="no linux/amd64 entry among 2"):
        index = _index(("linux", "arm64", a.manifest), ("linux", "s390x", b.manifest))
        warm.choose_platform(json.loads(index), "linux/amd64")
    only = json.loads(_index(("linux", "arm64", a.manifest)))
    assert warm.choose_platform(only, "linux/amd64") == a.manifest_digest


def test_a_corrupted_blob_fails_the_image_with_its_digest() -> None:
    standin = Standin()
    standin.add_image("lab/app", "v1", IMAGE)
    bad = digest_of(IMAGE.layers[1])
    standin.corrupt.add(bad)
    with serve(standin), pytest.raises(warm.WarmError) as err:
        warm.warm(standin.url, "lab/app", "v1")
    message, result = err.value.args
    assert message.startswith(f"1 of 4 blobs failed: blob {bad}: content hashes to sha256:")
    assert [b["status"] for b in result["blobs"]].count("failed") == 1


def test_a_pinned_manifest_that_hashes_otherwise_fails() -> None:
    standin = Standin()
    standin.add_image("lab/app", "v1", IMAGE)
    wrong = "sha256:" + "0" * 64
    standin.manifests[f"lab/app/{wrong}"] = standin.manifests["lab/app/v1"]
    with serve(standin), pytest.raises(warm.WarmError, match="content hashes to"):
        warm.warm(standin.url, "lab/app", wrong)


def test_a_missing_image_names_the_url_and_status() -> None:
    standin = Standin()
    with serve(standin), pytest.raises(warm.WarmError, match=r"manifests/v9: HTTP 404"):
        warm.warm(standin.url, "lab/app", "v9")


# `ctr images ls` pads its columns with spaces; SIZE is two words
CTR_LS = "\n".join([
    "REF TYPE DIGEST SIZE PLATFORMS LABELS",
    f"docker.io/library/busybox:1.36   application/vnd.oci.image.index.v1+json   sha256:{'a' * 64}  2.1 MiB "
    "linux/amd64 -",
    f"10.89.0.2:5000/lab/app:v1   application/vnd.oci.image.manifest.v1+json   sha256:{'b' * 64}  24.0 MiB "
    "linux/amd64 io.cri-containerd.image=managed",
]) + "\n"


def test_ctr_listing_and_presence() -> None:
    images = ctr.listed(CTR_LS)
    assert images == {"docker.io/library/busybox:1.36": "sha256:" + "a" * 64,
                      "10.89.0.2:5000/lab/app:v1": "sha256:" + "b" * 64}
    assert ctr.present(images, "10.89.0.2:5000/lab/app:v1") == "sha256:" + "b" * 64
    assert ctr.present(images, "10.89.0.2:5000/lab/app:v2") is None
    pinned_ok = "docker.io/library/busybox:1.36@sha256:" + "a" * 64
    assert ctr.present({**images, pinned_ok: "sha256:" + "a" * 64}, pinned_ok) == "sha256:" + "a" * 64
    moved = "docker.io/library/busybox:1.36@sha256:" + "c" * 64
    assert ctr.present({**images, moved: "sha256:" + "a" * 64}, moved) is None
    assert ctr.pinned(moved) == "sha256:" + "c" * 64 and ctr.pinned("x/y:1") is None
