"""OCI archives of the built Kubernetes release's images (`python -m tests.lab_build --images DIR`), one per
tag, with a record of what went into them: each image's digest and size, and the Debian packages of
kube-proxy's iptables (name, version, sha256). `podman load` and `ctr images import` take the archives."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.lab_build.build import Built
from tests.lab_build.images import CONTROL_PLANE, kubernetes_images, oci_archive
from tests.lab_build.netfilter import Userspace


def write_kubernetes_images(built: Built, out: Path, userspace: Userspace, arch: str = "amd64",
                            say: Callable[[str], None] = print) -> dict:
    """Write `<out>/kubernetes-<tag>-<arch>.oci.tar` (the control plane and kube-proxy) and
    `<out>/kubernetes-<tag>-<arch>.json` (the record, also returned)."""
    tag = built.component.tag
    binaries = {name: built.binary(name).read_bytes() for name in CONTROL_PLANE}
    images = kubernetes_images(binaries, tag, arch, userspace.layer_files)
    out.mkdir(parents=True, exist_ok=True)
    # the tag's dots rule out Path.with_suffix
    tar, json_path = out / f"kubernetes-{tag}-{arch}.oci.tar", out / f"kubernetes-{tag}-{arch}.json"
    archive = oci_archive(images)
    tar.write_bytes(archive)
    record = {
        "tag": tag, "arch": arch, "archive": str(tar), "bytes": len(archive),
        "images": [{"reference": i.reference, "digest": i.digest,
                    "compressed_bytes": sum(len(layer) for layer in i.layers)} for i in images],
        "kube-proxy userspace": userspace.record,
    }
    json_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    for deb in userspace.packages:
        say(f"lab build: kube-proxy's userspace: {deb.package} {deb.version} {deb.arch} sha256:{deb.sha256}")
    for image in images:
        say(f"lab build: {image.reference} {image.digest}")
    say(f"lab build: {tar} ({len(archive) / 2**20:.1f} MiB), record {json_path}")
    return record
