"""Lay the built binaries out in the upstream download layouts, so the roles fetch and check them from the
lab mirror exactly as they would from the real sites:

- Kubernetes, dl.k8s.io's: `kubernetes/<tag>/bin/linux/<arch>/<binary>` beside `<binary>.sha256` (the hex
  digest alone, as dl.k8s.io serves it);
- etcd, its GitHub releases': `etcd/etcd-<tag>-linux-<arch>.tar.gz` (one top folder `etcd-<tag>-linux-<arch>/`
  holding etcd, etcdctl and etcdutl) and a `SHA256SUMS` listing every tarball of the folder.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from pathlib import Path

from tests.lab_build.build import Built
from ufcctl.lab.layout import KUBE_EMULATED, KUBE_REAL

# Go's GOARCH is already the name both layouts use (amd64, arm64)


def _write_atomically(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_bytes(data)
    tmp.chmod(mode)
    tmp.replace(path)


def _same(path: Path, data: bytes) -> bool:
    return path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data


def publish_kubernetes(built: Built, mirror: Path, arch: str,
                       names: tuple[str, ...] | None = None) -> list[Path]:
    """dl.k8s.io's layout (every command, or those `names`); returns the paths written or already right."""
    folder = mirror / "kubernetes" / built.component.tag / "bin" / "linux" / arch
    return [_publish_binary(built.binary(c.name), folder) for c in built.component.commands
            if names is None or c.name in names]


def _publish_binary(source: Path, folder: Path) -> Path:
    """One binary and its `.sha256` (the hex digest alone, as dl.k8s.io serves it) into `folder`."""
    data = source.read_bytes()
    target = folder / source.name
    if not _same(target, data):
        _write_atomically(target, data, 0o755)
    digest = (hashlib.sha256(data).hexdigest() + "\n").encode()
    if not _same(target.with_name(source.name + ".sha256"), digest):
        _write_atomically(target.with_name(source.name + ".sha256"), digest)
    return target


# Bump when the tarball's layout changes: the tarballs cached beside the builds are then made again.
TARBALL_FORMAT = 1


def etcd_tarball(built: Built, arch: str) -> tuple[str, bytes]:
    """(file name, bytes) of etcd's release tarball for the built tag, made once per build and arch and
    kept in the build's cache folder: gzip of etcd's ~80 MB of binaries took ~11 CPU-s on every `lab up`
    (a CI run has several beside the tests)."""
    name = f"etcd-{built.component.tag}-linux-{arch}.tar.gz"
    cached = built.path / f"release-{TARBALL_FORMAT}" / name
    if cached.is_file():
        return name, cached.read_bytes()
    data = build_etcd_tarball(built, arch)
    _write_atomically(cached, data)
    return name, data


def build_etcd_tarball(built: Built, arch: str) -> bytes:
    """etcd's release tarball for the built tag: reproducible (fixed mtimes and owners), so the same
    build gives the same sha256."""
    top = f"etcd-{built.component.tag}-linux-{arch}"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        folder = tarfile.TarInfo(top)
        folder.type, folder.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(folder)
        for command in built.component.commands:
            data = built.binary(command.name).read_bytes()
            info = tarfile.TarInfo(f"{top}/{command.name}")
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    # gzip's header holds a time; tarfile takes it from time.time(): zero it for a stable digest
    raw = bytearray(buf.getvalue())
    raw[4:8] = b"\0\0\0\0"
    return bytes(raw)


def publish_etcd(built: Built, mirror: Path, arch: str) -> Path:
    name, data = etcd_tarball(built, arch)
    folder = mirror / "etcd"
    target = folder / name
    if not _same(target, data):
        _write_atomically(target, data)
    sums = []
    for tarball in sorted(folder.glob("etcd-*.tar.gz")):
        sums.append(f"{hashlib.sha256(tarball.read_bytes()).hexdigest()}  {tarball.name}\n")
    listing = "".join(sums).encode()
    if not _same(folder / "SHA256SUMS", listing):
        _write_atomically(folder / "SHA256SUMS", listing)
    return target


def publish_lab(root: Path, arch: str = "amd64", say=print, kube: str = KUBE_EMULATED) -> dict[str, object]:
    """What the lab deploys of the built components, into the mirror folder `root` (built first where the
    cache has not got them): etcd's release tarball and kubectl in dl.k8s.io's layout; with `kube="real"`
    also kubeadm and kubelet, of ufc_kube_version's default and of `upgrade-cluster`'s target (the LAB KUBE
    EMULATOR's otherwise). Returns the inventory variables that make the roles install exactly these."""
    from tests.lab_build.build import build
    from tests.lab_build.components import ETCD, KUBERNETES, KUBERNETES_NEXT

    etcd = build(ETCD, say=say)
    publish_etcd(etcd, root, arch)
    kubernetes = build(KUBERNETES, say=say)
    if kube == KUBE_REAL:
        publish_kubernetes(kubernetes, root, arch, ("kubeadm", "kubelet", "kubectl"))
        publish_kubernetes(build(KUBERNETES_NEXT, say=say), root, arch, ("kubeadm", "kubelet", "kubectl"))
    else:
        publish_kubernetes(kubernetes, root, arch, ("kubectl",))
    # kubectl's skew check stays on: the cluster runs this kubectl's release (the LAB KUBE EMULATOR's:
    # tests/lab_standins/kube_emulator/packages.py VERSIONS), and after `upgrade-cluster` the next minor,
    # one minor away, as Kubernetes' version-skew policy allows
    return {
        "ufc_etcd_version": ETCD.tag.lstrip("v"),
        "kube_node_kubectl_version": KUBERNETES.tag.lstrip("v"),
    }
