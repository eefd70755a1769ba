"""LAB UPSTREAM REGISTRY: a test OCI image built in pure Python, the same bytes for the same seed.

Each layer is a gzip'd tar holding one file of seeded random (incompressible) bytes, so the
compressed layer is about as large as the file and a cache hit or miss shows in bytes on the wire.
Tar and gzip headers are fixed (mtime 0, uid/gid 0, no names), so digests depend only on the
seed, the layer count and the sizes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import random
import tarfile
from dataclasses import dataclass

MIB = 1 << 20
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
DEFAULT_LAYERS = 4
DEFAULT_LAYER_BYTES = 6 * MIB  # 4 x 6 MiB: ~24 MiB per image


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _json(doc: object) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class TestImage:
    __test__ = False  # a data class, not a pytest test class
    manifest: bytes
    config: bytes
    layers: tuple[bytes, ...]  # gzip'd tars, in manifest order
    diff_ids: tuple[str, ...]  # sha256 of each uncompressed tar

    @property
    def manifest_digest(self) -> str:
        return digest_of(self.manifest)

    @property
    def blobs(self) -> dict[str, bytes]:
        """digest -> bytes of the config and every layer (what a pull GETs from /blobs/)."""
        return {digest_of(b): b for b in (self.config, *self.layers)}

    @property
    def size(self) -> int:
        """Bytes of config + layers, as the manifest lists them (what a registry sends per pull)."""
        return len(self.config) + sum(len(b) for b in self.layers)


def _layer(seed: int, index: int, size: int) -> tuple[bytes, bytes]:
    """(gzip'd tar, uncompressed tar) of one file of seeded random bytes."""
    data = random.Random(f"ufc-lab-upstream/{seed}/{index}").randbytes(size)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo(f"ufc-lab/layer-{index}.bin")
        info.size, info.mtime, info.mode, info.uid, info.gid = size, 0, 0o644, 0, 0
        tar.addfile(info, io.BytesIO(data))
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=1) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue(), raw.getvalue()


def build_image(seed: int = 0, layers: int = DEFAULT_LAYERS,
                layer_bytes: int = DEFAULT_LAYER_BYTES) -> TestImage:
    """A linux/amd64 OCI image: `layers` layers of `layer_bytes` random bytes each, config, manifest."""
    if layers < 1 or layer_bytes < 1:
        raise ValueError("layers and layer_bytes must be at least 1")
    built = [_layer(seed, i, layer_bytes) for i in range(layers)]
    blobs = tuple(b for b, _ in built)
    diff_ids = tuple(digest_of(raw) for _, raw in built)
    config = _json({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Cmd": ["/bin/true"], "Labels": {"io.ufcctl.lab": "LAB UPSTREAM REGISTRY test image",
                                                     "io.ufcctl.lab.seed": str(seed)}},
        "rootfs": {"type": "layers", "diff_ids": list(diff_ids)},
    })
    manifest = _json({
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": CONFIG_TYPE, "digest": digest_of(config), "size": len(config)},
        "layers": [{"mediaType": LAYER_TYPE, "digest": digest_of(b), "size": len(b)} for b in blobs],
    })
    return TestImage(manifest, config, blobs, diff_ids)
