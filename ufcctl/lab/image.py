"""The lab node image: debootstrap base (cached tarball) + Containerfile, rebuilt when its inputs change."""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ufcctl.engine import statedir
from ufcctl.engine.files import open_lock
from ufcctl.lab.debootstrap import RootfsSpec, build_rootfs_tarball
from ufcctl.lab.podman import Podman, require_tools

# Fixed names: molecule scenarios reference NODE_IMAGE exactly.
BASE_IMAGE = "localhost/ufcctl-base:bookworm"
NODE_IMAGE = "localhost/ufcctl-node:bookworm"
# The image recipe is package data beside this module (found the same way in a checkout and a wheel).
IMAGE_DIR = Path(__file__).resolve().parent / "image"
HASH_LABEL = "ufcctl.image-hash"
ROOTFS_LABEL = "ufcctl.rootfs-hash"

# The base holds what every node needs to boot and be managed; component packages are added by
# the Containerfile, so changing them rebuilds from the cached tarball without debootstrap.
ROOTFS = RootfsSpec(
    suite="bookworm",
    mirror=os.environ.get("UFC_LAB_DEBIAN_MIRROR", "http://deb.debian.org/debian"),
    packages=(
        "systemd", "systemd-sysv", "dbus", "openssh-server", "python3", "sudo", "iproute2", "procps",
        "iputils-ping", "curl", "ca-certificates", "kmod",
    ),
)

Notify = Callable[[str], None]


@dataclass(frozen=True)
class ImageResult:
    image: str
    image_hash: str
    built: bool
    debootstrap_seconds: float | None = None  # None: the cached tarball or base image was reused
    import_seconds: float | None = None
    build_seconds: float | None = None


def rootfs_hash(spec: RootfsSpec = ROOTFS) -> str:
    return hashlib.sha256(spec.key().encode()).hexdigest()[:16]


def image_hash(image_dir: Path = IMAGE_DIR, spec: RootfsSpec = ROOTFS) -> str:
    """sha256 of the Containerfile and every asset beside it (names and bytes) plus the base's inputs."""
    digest = hashlib.sha256(f"rootfs:{rootfs_hash(spec)}\n".encode())
    for path in sorted(p for p in image_dir.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(image_dir).as_posix()}\0".encode())
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


@contextmanager
def _image_lock() -> Iterator[None]:
    # Images are global to this machine's podman storage, whatever UFC_STATE_DIR says, so the
    # lock is too: two `lab up` (or a test and a user) must not build at the same time.
    # In /tmp, where anyone may plant a link or a FIFO under this name: open_lock follows neither.
    fd = open_lock(Path(tempfile.gettempdir()) / "ufcctl-lab-image.lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def ensure_image(podman: Podman, cache_dir: Path, notify: Notify, force: bool = False) -> ImageResult:
    """Make sure NODE_IMAGE exists with the current hash; build what is missing, reuse the rest."""
    require_tools(["podman", "runc", "netavark"])
    want = image_hash()
    with _image_lock():
        labels = podman.image_labels(NODE_IMAGE)
        if not force and labels is not None and labels.get(HASH_LABEL) == want:
            return ImageResult(NODE_IMAGE, want, built=False)
        statedir.ensure_private_dir(cache_dir)  # .ufc/lab on a first `lab image`: 0700 like all of .ufc
        debootstrap_s, import_s = _ensure_base(podman, cache_dir, notify)
        notify(f"building {NODE_IMAGE} from {IMAGE_DIR}/Containerfile "
               f"(log: {cache_dir / 'image-build.log'})")
        started = time.monotonic()
        podman.build(IMAGE_DIR, NODE_IMAGE, {HASH_LABEL: want}, cache_dir / "image-build.log")
        build_s = time.monotonic() - started
        prune_old_builds(podman)
        return ImageResult(NODE_IMAGE, want, True, debootstrap_s, import_s, build_s)


def prune_old_builds(podman: Podman) -> list[str]:
    """Remove earlier node builds (untagged, our label) that no container uses any more."""
    return [image for image in podman.dangling_images(HASH_LABEL) if podman.remove_image(image) is None]


def _ensure_base(podman: Podman, cache_dir: Path, notify: Notify) -> tuple[float | None, float | None]:
    rhash = rootfs_hash()
    base_labels = podman.image_labels(BASE_IMAGE)
    if base_labels is not None and base_labels.get(ROOTFS_LABEL) == rhash:
        return None, None
    tarball = cache_dir / f"rootfs-{ROOTFS.suite}-{rhash}.tar"
    debootstrap_s = None
    if not tarball.exists():
        notify(f"debootstrap {ROOTFS.suite} ({ROOTFS.variant}) from {ROOTFS.mirror}; takes a minute or two")
        started = time.monotonic()
        build_rootfs_tarball(ROOTFS, tarball, cache_dir / "debootstrap.log")
        debootstrap_s = time.monotonic() - started
        for stale in cache_dir.glob(f"rootfs-{ROOTFS.suite}-*.tar"):
            if stale != tarball:
                stale.unlink()
    notify(f"importing {tarball.name} as {BASE_IMAGE}")
    started = time.monotonic()
    podman.import_tarball(tarball, BASE_IMAGE, {ROOTFS_LABEL: rhash})
    return debootstrap_s, time.monotonic() - started


def rootfs_tarballs(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob("rootfs-*.tar"))
