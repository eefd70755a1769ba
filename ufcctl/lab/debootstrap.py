"""Builds the lab's Debian root filesystem tarball with debootstrap (there is no registry to pull from)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ufcctl.engine import statedir
from ufcctl.engine.files import open_append
from ufcctl.errors import EnvironmentMissing, RunFailed
from ufcctl.lab.podman import require_tools

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RootfsSpec:
    suite: str
    mirror: str
    packages: tuple[str, ...]
    variant: str = "minbase"

    def key(self) -> str:
        """What decides the tarball's content, as one string to hash (any mirror serves the same suite)."""
        return f"{self.variant}|{self.suite}|{','.join(sorted(self.packages))}"


def build_rootfs_tarball(spec: RootfsSpec, dest: Path, log_file: Path) -> None:
    """debootstrap into a temporary directory beside dest, then tar it to dest (atomically)."""
    require_tools(["debootstrap", "tar"])
    if os.geteuid() != 0:
        raise EnvironmentMissing(
            "debootstrap must run as root to build the lab's root filesystem",
            "run `ufcctl lab image` as root (the lab also needs rootful podman for fixed IPs)",
        )
    statedir.ensure_private_dir(dest.parent)
    workdir = Path(tempfile.mkdtemp(prefix="rootfs-", dir=dest.parent))
    rootfs = workdir / "rootfs"
    try:
        argv = ["debootstrap", f"--variant={spec.variant}", f"--include={','.join(spec.packages)}",
                spec.suite, str(rootfs), spec.mirror]
        _run(argv, log_file, "debootstrap")
        _slim(rootfs)
        partial = workdir / dest.name  # the per-process directory: no predictable name beside dest
        # --numeric-owner: the image's uids must be the rootfs's, not this host's name mapping.
        _run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(partial), "."], log_file, "tar")
        partial.replace(dest)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _slim(rootfs: Path) -> None:
    """Drop what must not be shared by every container or is just download cache."""
    for path in (rootfs / "etc" / "ssh").glob("ssh_host_*"):
        path.unlink()  # host keys are generated per container at first boot
    for cache in (rootfs / "var" / "cache" / "apt" / "archives", rootfs / "var" / "lib" / "apt" / "lists"):
        for path in cache.glob("*"):
            if path.is_file():
                path.unlink()


def _run(argv: list[str], log_file: Path, what: str) -> None:
    log.debug("run: %s", " ".join(argv))
    with os.fdopen(open_append(log_file), "a") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        proc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False, timeout=3600)
    if proc.returncode != 0:
        tail = [line for line in log_file.read_text().splitlines() if line.strip()][-15:]
        raise RunFailed(f"{what} failed (exit {proc.returncode})", f"see {log_file}", details=tail)
