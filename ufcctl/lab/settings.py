"""The container lab's settings (what `ufcctl lab` was asked for, and where its files live) and the
results of up, down and status that the commands print."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ufcctl.lab import image as node_image
from ufcctl.lab.layout import DEFAULT_LAB, ROLE_NPU_MIRROR, LabLayout
from ufcctl.lab.nodes import LABEL_ROLE
from ufcctl.lab.npu import NpuEmulator
from ufcctl.lab.podman import ContainerInfo
from ufcctl.paths import inventories_dir, state_dir


@dataclass(frozen=True)
class LabSettings:
    """Which lab and where its files go; a test passes its own so it never meets a user's lab."""

    lab: str = DEFAULT_LAB
    inventory_dir: Path | None = None  # None: inventories/lab (default lab) or inventories/lab-NAME
    state: Path | None = None  # None: <state_dir>/lab
    # A `monitoring` group (roles/monitoring on two control planes, exporters everywhere); tests that
    # do not look at it leave it out to spare the lab's CPU (`lab up --no-monitoring`).
    monitoring: bool = True

    @property
    def state_path(self) -> Path:
        return self.state or state_dir() / "lab"

    @property
    def private_key(self) -> Path:
        return self.state_path / "id_ed25519"

    @property
    def nfs_dir(self) -> Path:
        return self.state_path / f"{self.lab}-nfs-export"

    @property
    def etcd_store_dir(self) -> Path:
        """The NFS server's etcd snapshot store (roles/nfs_server nfs_server_backup_path), bind-mounted like
        the export: ganesha's VFS backend cannot serve a directory on the container's overlayfs."""
        return self.state_path / f"{self.lab}-etcd-store"

    @property
    def npu_emulator_dir(self) -> Path:
        """The NPU emulator's packages, bind-mounted read-only into its mirror container."""
        return self.state_path / f"{self.lab}-npu-emulator"

    def default_inventory(self) -> Path:
        if self.inventory_dir is not None:
            return self.inventory_dir.resolve()
        name = "lab" if self.lab == DEFAULT_LAB else f"lab-{self.lab}"
        return inventories_dir() / name


@dataclass(frozen=True)
class UpResult:
    layout: LabLayout
    inventory_dir: Path
    created: tuple[str, ...]
    removed: tuple[str, ...]
    restarted: tuple[str, ...]
    inventory_changed: bool
    image: node_image.ImageResult
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> wall seconds
    stale_image: tuple[str, ...] = ()  # containers still running an older image build
    degraded: dict[str, tuple[str, ...]] = field(default_factory=dict)  # container -> failed units
    npu_emulator: NpuEmulator = NpuEmulator("skipped")
    kube: str = "emulated"  # what runs Kubernetes on the nodes (layout.KUBE_MODES)

    @property
    def already_up(self) -> bool:
        return not (self.created or self.removed or self.restarted or self.npu_emulator.changed)


@dataclass(frozen=True)
class DownResult:
    lab: str
    containers: tuple[str, ...]
    network: str | None
    inventory_dir: Path | None
    images: tuple[str, ...] = ()
    kept_images: dict[str, str] = field(default_factory=dict)  # image -> why podman kept it


@dataclass(frozen=True)
class LabStatus:
    lab: str
    network: str | None
    subnet: str | None
    inventory_dir: str | None
    containers: tuple[ContainerInfo, ...]  # nodes first, then the emulators' containers

    @property
    def npu_mirror(self) -> ContainerInfo | None:
        return next((c for c in self.containers if c.labels.get(LABEL_ROLE) == ROLE_NPU_MIRROR), None)
