"""Builds the LAB KUBE EMULATOR's binaries in dl.k8s.io's layout (kubernetes/v<version>/bin/linux/<arch>/
<name> with <name>.sha256 holding the bare hex digest), into the lab mirror's directory."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.lab_standins.npu_emulator.packages import write_if_changed

HERE = Path(__file__).resolve().parent
VERSIONS = ("1.31.4",)  # ufc_kube_version's default (roles/kube_control_plane, roles/kube_node)
ARCH = "amd64"
BINARIES = {"kubeadm": "kubeadm.py", "kubelet": "kubelet.py"}


def binary_dir(root: Path, version: str, arch: str = ARCH) -> Path:
    return root / "kubernetes" / f"v{version}" / "bin" / "linux" / arch


def render(name: str, version: str) -> bytes:
    return (HERE / BINARIES[name]).read_text().replace("@VERSION@", f"v{version}").encode()


def build(root: Path, versions: tuple[str, ...] = VERSIONS) -> dict[str, str]:
    """Write every binary and its .sha256; returns relative path -> sha256."""
    sums: dict[str, str] = {}
    for version in versions:
        directory = binary_dir(root, version)
        directory.mkdir(parents=True, exist_ok=True)
        for name in BINARIES:
            data = render(name, version)
            digest = hashlib.sha256(data).hexdigest()
            write_if_changed(directory / name, data, 0o755)
            write_if_changed(directory / f"{name}.sha256", f"{digest}\n".encode(), 0o644)
            sums[str((directory / name).relative_to(root))] = digest
    return sums
