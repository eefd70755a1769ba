"""OCI images of the built binaries, under the names the real manifests use (registry.k8s.io/kube-apiserver
and so on), written here because no image can be pulled from outside.

An image is one gzip'd layer holding the files (the binary at the path upstream's image has it), a config
with the entrypoint upstream's image declares (or none where upstream has none: kubeadm's static pods
give `command:`), and a manifest. Tar and gzip headers are fixed, so the same binaries give the same
digests on every machine.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_json(doc: object) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Image:
    name: str        # repository as the manifests name it, e.g. registry.k8s.io/kube-apiserver
    tag: str
    manifest: bytes
    config: bytes
    layers: tuple[bytes, ...]

    @property
    def reference(self) -> str:
        return f"{self.name}:{self.tag}"

    @property
    def digest(self) -> str:
        return digest_of(self.manifest)

    @property
    def manifest_digest(self) -> str:
        """The name the registry pusher (tests/lab_standins/upstream_registry/push.py) reads."""
        return self.digest

    @property
    def blobs(self) -> dict[str, bytes]:
        return {digest_of(b): b for b in (self.config, *self.layers)}

    @property
    def registry(self) -> str:
        return self.name.split("/", 1)[0]

    @property
    def repository(self) -> str:
        """The name inside its registry: kube-apiserver of registry.k8s.io/kube-apiserver."""
        return self.name.split("/", 1)[1]


@dataclass(frozen=True)
class Symlink:
    """A symbolic link in a layer (Debian's libfoo.so.1 -> libfoo.so.1.2.3, iptables -> xtables-nft-multi)."""

    target: str


def layer(files: Mapping[str, tuple[bytes, int] | Symlink], links: Mapping[str, str] | None = None,
          dirs: Mapping[str, int] | None = None) -> tuple[bytes, str]:
    """(gzip'd tar, diff id) of `files`: path -> (bytes, mode) or a Symlink; `links`: path -> symlink
    target; `dirs`: folder -> mode (e.g. /tmp 0o1777); other parent folders are added with 0o755."""
    links = {**(links or {}), **{p: e.target for p, e in files.items() if isinstance(e, Symlink)}}
    files = {p: e for p, e in files.items() if not isinstance(e, Symlink)}
    dirs = dirs or {}
    entries: dict[str, tarfile.TarInfo] = {}
    data_of: dict[str, bytes] = {}

    def folder(name: str, mode: int = 0o755) -> None:
        if name not in entries:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            entries[name] = info

    for path in sorted({*files, *links, *dirs}):
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            folder("/".join(parts[:depth]), dirs.get("/" + "/".join(parts[:depth]), 0o755))
        name = path.strip("/")
        if path in dirs:
            folder(name, dirs[path])
        elif path in links:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, links[path], 0o777
            entries[name] = info
        else:
            data, mode = files[path]
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            entries[name], data_of[name] = info, data
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, info in entries.items():
            tar.addfile(info, io.BytesIO(data_of[name]) if name in data_of else None)
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=6) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue(), digest_of(raw.getvalue())


def build_image(name: str, tag: str, files: Mapping[str, tuple[bytes, int] | Symlink], arch: str = "amd64",
                entrypoint: Sequence[str] | None = None, user: str | None = None,
                links: Mapping[str, str] | None = None, dirs: Mapping[str, int] | None = None,
                labels: Mapping[str, str] | None = None,
                lower: Sequence[tuple[bytes, str]] = ()) -> Image:
    """One layer of `files`, `links` and `dirs`, above the `lower` layers ((gzip'd tar, diff id) each,
    e.g. a program several images share, stored once in a registry)."""
    blob, diff_id = layer(files, links, dirs)
    blobs = (*(b for b, _ in lower), blob)
    diff_ids = [*(d for _, d in lower), diff_id]
    config: dict = {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                    "Labels": {"io.ufcctl.lab.built-from": "Go modules at pinned tags (tests/lab_build)",
                               **(labels or {})}}
    if entrypoint:
        config["Entrypoint"] = list(entrypoint)
    if user:
        config["User"] = user
    config_blob = canonical_json({"architecture": arch, "os": "linux", "config": config,
                         "rootfs": {"type": "layers", "diff_ids": diff_ids}})
    manifest = canonical_json({
        "schemaVersion": 2, "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": CONFIG_TYPE, "digest": digest_of(config_blob), "size": len(config_blob)},
        "layers": [{"mediaType": LAYER_TYPE, "digest": digest_of(b), "size": len(b)} for b in blobs],
    })
    return Image(name, tag, manifest, config_blob, blobs)


def oci_archive(images: Sequence[Image]) -> bytes:
    """An OCI image layout as one tar (`ctr images import` takes it), each image named by reference."""
    out = io.BytesIO()
    index = {"schemaVersion": 2, "manifests": [
        {"mediaType": MANIFEST_TYPE, "digest": img.digest, "size": len(img.manifest),
         "annotations": {"io.containerd.image.name": img.reference,
                         "org.opencontainers.image.ref.name": img.tag}}
        for img in images]}
    entries = {"oci-layout": canonical_json({"imageLayoutVersion": "1.0.0"}),
               "index.json": canonical_json(index)}
    for img in images:
        for data in (img.manifest, *img.blobs.values()):
            entries[f"blobs/sha256/{digest_of(data)[7:]}"] = data
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data in entries.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def pause_image(pause_binary: bytes, arch: str = "amd64", tag: str = "3.10.1") -> Image:
    """registry.k8s.io/pause as upstream lays it out: the program at /pause, which is the entrypoint."""
    return build_image("registry.k8s.io/pause", tag, {"/pause": (pause_binary, 0o755)}, arch,
                       entrypoint=["/pause"], user="65535:65535")


# kubeadm's static pods and kube-proxy DaemonSet give `command:`, so these images need no entrypoint;
# upstream's put the binary at /usr/local/bin (registry.k8s.io/kube-apiserver and so on)
CONTROL_PLANE = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy")


def kube_proxy_image(binary: bytes, tag: str, userspace: Mapping[str, tuple[bytes, int] | Symlink],
                     arch: str = "amd64") -> Image:
    """registry.k8s.io/kube-proxy: the binary at /usr/local/bin/kube-proxy (kubeadm's DaemonSet runs that
    path) beside the iptables and conntrack userspace it runs (tests/lab_build/netfilter.py)."""
    if "/usr/sbin/iptables" not in userspace:
        raise ValueError("kube-proxy's image needs the iptables userspace (tests/lab_build/netfilter.py)")
    return build_image("registry.k8s.io/kube-proxy", tag,
                       {**userspace, "/usr/local/bin/kube-proxy": (binary, 0o755)}, arch)


def kubernetes_images(binaries: dict[str, bytes], tag: str, arch: str = "amd64",
                      kube_proxy_userspace: Mapping[str, tuple[bytes, int] | Symlink] | None = None,
                      ) -> list[Image]:
    """registry.k8s.io/<component>:<tag> for each control-plane binary given (name -> bytes); kube-proxy's
    only with its userspace (kube-proxy without iptables stops at its first sync)."""
    images = []
    for name in CONTROL_PLANE:
        if name not in binaries:
            continue
        if name == "kube-proxy":
            images.append(kube_proxy_image(binaries[name], tag, kube_proxy_userspace or {}, arch))
        else:
            images.append(build_image(f"registry.k8s.io/{name}", tag,
                                      {f"/usr/local/bin/{name}": (binaries[name], 0o755)}, arch))
    return images
