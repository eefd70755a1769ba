"""Generates the lab NPU emulator's installer packages (real Ascend HDK file names, emulated contents)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKSUM_FILE = "SHA256SUMS"


def driver_name(chip: str, version: str, arch: str) -> str:
    """docs/reference/ascend.md §6: Ascend-hdk-<chip>-npu-driver_<ver>_linux-<arch>.run"""
    return f"Ascend-hdk-{chip}-npu-driver_{version}_linux-{arch}.run"


def firmware_name(chip: str, version: str) -> str:
    """docs/reference/ascend.md §6: Ascend-hdk-<chip>-npu-firmware_<ver>.run"""
    return f"Ascend-hdk-{chip}-npu-firmware_{version}.run"


@dataclass(frozen=True)
class Release:
    """One emulated HDK release: a driver and a firmware package."""

    driver_version: str
    firmware_version: str
    chip: str = "910b"
    arch: str = "x86_64"

    @property
    def driver(self) -> str:
        return driver_name(self.chip, self.driver_version, self.arch)

    @property
    def firmware(self) -> str:
        return firmware_name(self.chip, self.firmware_version)


# Two emulated HDK releases: tests install the first, then upgrade to the second.
RELEASES = (Release("24.1.rc2", "7.5.0.1.129"), Release("24.1.rc3", "7.5.0.2.220"))


def _render(kind: str, chip: str, version: str, package: str) -> str:
    text = (HERE / "installer.sh").read_text()
    for key, value in {"KIND": kind, "CHIP": chip, "VERSION": version, "PACKAGE": package}.items():
        text = text.replace(f"@{key}@", value)
    if kind == "driver":  # the driver package carries npu-smi and hccn_tool, as the real one does
        text += (HERE / "npu_smi.py").read_text() + "__HCCN_TOOL_BELOW__\n"
        text += (HERE / "hccn_tool.py").read_text()
    return text


def build(out_dir: Path, releases: list[Release]) -> dict[str, str]:
    """Write every release's two packages and a SHA256SUMS file; returns file name -> sha256."""
    out_dir.mkdir(parents=True, exist_ok=True)
    sums: dict[str, str] = {}
    for release in releases:
        for kind, name, version in (("driver", release.driver, release.driver_version),
                                    ("firmware", release.firmware, release.firmware_version)):
            data = _render(kind, release.chip, version, name).encode()
            write_if_changed(out_dir / name, data, 0o755)
            sums[name] = hashlib.sha256(data).hexdigest()
    # sha256sum's format ("<hex>  <name>"), which get_url's checksum-file lookup reads
    listing = "".join(f"{h}  {n}\n" for n, h in sorted(sums.items())).encode()
    write_if_changed(out_dir / CHECKSUM_FILE, listing, 0o644)
    return sums


# container_runtime_ascend_version's default (roles/container_runtime), and a later one the upgrade test
# (tests/integration/test_workers_upgrade_lab.py) moves the NPU workers to through `ufcctl deploy`
DOCKER_RUNTIME_VERSIONS = ("6.0.0", "6.0.1")


def docker_runtime_name(version: str, arch: str = "x86_64") -> str:
    """docs/reference/nodes-observability-images.md §9: Ascend-docker-runtime_<ver>_linux-<arch>.run"""
    return f"Ascend-docker-runtime_{version}_linux-{arch}.run"


def build_docker_runtime(out_dir: Path,
                         versions: tuple[str, ...] = DOCKER_RUNTIME_VERSIONS) -> dict[str, str]:
    """The emulated Ascend Docker Runtime installers and their SHA256SUMS in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    sums: dict[str, str] = {}
    for version in versions:
        name = docker_runtime_name(version)
        text = (HERE / "docker_runtime.sh").read_text().replace("@VERSION@", version)
        data = text.replace("@PACKAGE@", name).encode()
        write_if_changed(out_dir / name, data, 0o755)
        sums[name] = hashlib.sha256(data).hexdigest()
    listing = "".join(f"{h}  {n}\n" for n, h in sorted(sums.items())).encode()
    write_if_changed(out_dir / CHECKSUM_FILE, listing, 0o644)
    return sums


def write_if_changed(path: Path, data: bytes, mode: int) -> None:
    """Leave an identical file alone: a running mirror serves these files while they are rebuilt."""
    if not (path.is_file() and path.read_bytes() == data):
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(data)
        partial.replace(path)
    path.chmod(mode)
