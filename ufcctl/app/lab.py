"""Use cases of the container lab: up (create or reconcile), down (remove exactly what up made), status."""

from __future__ import annotations

import fcntl
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ufcctl.app import lab_image
from ufcctl.app.lab_inventory import MARKER, InventoryPaths, render_inventory
from ufcctl.app.lab_layout import (
    DEFAULT_LAB,
    DEFAULT_SUBNET,
    DEFAULT_WORKERS,
    ROLE_CONTROL_PLANE,
    ROLE_WORKER,
    LabLayout,
    check_lab_name,
    container_prefix,
    network_name,
    parse_subnet,
    plan_layout,
)
from ufcctl.app.lab_nodes import (
    LABEL_IMAGE_HASH,
    LABEL_INVENTORY,
    LABEL_LAB,
    LABEL_NAME,
    LABEL_ROLE,
    PARALLEL_STARTS,
    NodeReady,
    check_inotify_room,
    container_spec,
    make_ready,
    parallel,
)
from ufcctl.engine.podman import ContainerInfo, NetworkInfo, Podman, require_tools
from ufcctl.engine.sshkey import ensure_keypair
from ufcctl.errors import InputError
from ufcctl.paths import inventories_dir, state_dir

Notify = Callable[[str], None]


@dataclass(frozen=True)
class LabSettings:
    """Which lab and where its files go; a test passes its own so it never meets a user's lab."""

    lab: str = DEFAULT_LAB
    inventory_dir: Path | None = None  # None: inventories/lab (default lab) or inventories/lab-NAME
    state: Path | None = None  # None: <state_dir>/lab

    @property
    def state_path(self) -> Path:
        return self.state or state_dir() / "lab"

    @property
    def private_key(self) -> Path:
        return self.state_path / "id_ed25519"

    @property
    def nfs_dir(self) -> Path:
        return self.state_path / f"{self.lab}-nfs-export"

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
    image: lab_image.ImageResult
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> wall seconds
    stale_image: tuple[str, ...] = ()  # containers still running an older image build
    degraded: dict[str, tuple[str, ...]] = field(default_factory=dict)  # container -> failed units

    @property
    def already_up(self) -> bool:
        return not (self.created or self.removed or self.restarted)


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
    containers: tuple[ContainerInfo, ...]


@contextmanager
def _lab_lock(settings: LabSettings) -> Iterator[None]:
    settings.state_path.mkdir(parents=True, exist_ok=True)
    with (settings.state_path / f"{settings.lab}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _owned_network(podman: Podman, lab: str) -> NetworkInfo | None:
    """The lab's network, or None; InputError if the name is taken by something ufcctl did not create."""
    net = podman.network(network_name(lab))
    if net is None:
        return None
    if net.labels.get(LABEL_LAB) != "1" or net.labels.get(LABEL_NAME) != lab:
        raise InputError(
            f"podman network {net.name} exists but was not created by `ufcctl lab up` (no {LABEL_LAB} label)",
            f"remove or rename it (podman network rm {net.name}), or use another lab name with --lab",
        )
    return net


def lab_containers(podman: Podman, lab: str) -> list[ContainerInfo]:
    """Containers of this lab: both labels set and the lab's name prefix, nothing else."""
    prefix = container_prefix(lab)
    return [
        c for c in podman.containers(label=f"{LABEL_NAME}={lab}", network=network_name(lab))
        if c.labels.get(LABEL_LAB) == "1" and c.labels.get(LABEL_NAME) == lab and c.name.startswith(prefix)
    ]


def _choose_shape(net: NetworkInfo | None, existing: list[ContainerInfo], workers: int | None,
                  subnet: str | None) -> tuple[int, str]:
    if net is not None:
        current = net.subnets[0] if net.subnets else "?"
        if subnet is not None and str(parse_subnet(subnet)) != current:
            raise InputError(
                f"lab network {net.name} is up on {current}, not {subnet}",
                "run `ufcctl lab down` first to move the lab to another subnet",
            )
        subnet = current
    if workers is None:
        workers = sum(1 for c in existing if c.labels.get(LABEL_ROLE) == ROLE_WORKER) or DEFAULT_WORKERS
    return workers, subnet or DEFAULT_SUBNET


def _check_foreign_names(podman: Podman, layout: LabLayout, ours: set[str]) -> None:
    wanted = {n.name for n in layout.nodes}
    foreign = sorted(c.name for c in podman.containers() if c.name in wanted and c.name not in ours)
    if foreign:
        raise InputError(
            f"container name(s) {', '.join(foreign)} are taken by containers `ufcctl lab` did not create",
            "remove them (podman rm -f NAME) or choose another lab name with --lab",
        )


def build_image(settings: LabSettings, notify: Notify, force: bool = False,
                podman: Podman | None = None) -> lab_image.ImageResult:
    """`ufcctl lab image`: the node image, built only when its inputs changed (or when forced)."""
    return lab_image.ensure_image(podman or Podman(), settings.state_path, notify, force=force)


def lab_up(settings: LabSettings, notify: Notify, workers: int | None = None, subnet: str | None = None,
           podman: Podman | None = None, parallel_starts: int = PARALLEL_STARTS) -> UpResult:
    """Create the lab, or reconcile a running one to the requested shape; rerunning is a no-op."""
    check_lab_name(settings.lab)
    if subnet is not None:
        parse_subnet(subnet)  # bad flags fail before anything is touched
    require_tools(["podman", "runc", "netavark", "ssh-keygen"])
    podman = podman or Podman()
    seconds: dict[str, float] = {}
    with _lab_lock(settings):
        net = _owned_network(podman, settings.lab)
        existing = lab_containers(podman, settings.lab)
        n_workers, subnet = _choose_shape(net, existing, workers, subnet)
        layout = plan_layout(settings.lab, n_workers, subnet)
        _check_foreign_names(podman, layout, {c.name for c in existing})
        inventory_dir = _inventory_dir(settings, net)
        _check_inventory_dir(inventory_dir, settings.lab)

        t0 = time.monotonic()
        image = lab_image.ensure_image(podman, settings.state_path, notify)
        seconds["image"] = time.monotonic() - t0
        public_key = ensure_keypair(settings.private_key)
        if net is None:
            labels = {LABEL_LAB: "1", LABEL_NAME: settings.lab, LABEL_INVENTORY: str(inventory_dir)}
            podman.create_network(layout.network, layout.subnet, labels)
            notify(f"created network {layout.network} ({layout.subnet})")

        t0 = time.monotonic()
        changes = _reconcile_containers(podman, settings, layout, existing, image, notify, parallel_starts)
        seconds["start"] = time.monotonic() - t0

        t0 = time.monotonic()
        notify(f"waiting for {len(layout.nodes)} node(s) to boot and answer SSH")
        ready: list[NodeReady] = parallel(
            lambda n: make_ready(podman, n, public_key, layout.gateway), list(layout.nodes), 16
        )
        seconds["ready"] = time.monotonic() - t0
        files = render_inventory(
            layout, InventoryPaths(inventory_dir, settings.private_key), {r.name: r.host_key for r in ready}
        )
        changed = _write_files(inventory_dir, files)
        return UpResult(
            layout=layout, inventory_dir=inventory_dir, created=changes.created, removed=changes.removed,
            restarted=changes.restarted, inventory_changed=changed, image=image, seconds=seconds,
            stale_image=changes.stale_image,
            degraded={r.name: r.failed_units for r in ready if r.failed_units},
        )


@dataclass(frozen=True)
class _Changes:
    created: tuple[str, ...]
    removed: tuple[str, ...]
    restarted: tuple[str, ...]
    stale_image: tuple[str, ...]  # kept containers that run an older build of the image


def _reconcile_containers(podman: Podman, settings: LabSettings, layout: LabLayout,
                          existing: list[ContainerInfo], image: lab_image.ImageResult, notify: Notify,
                          parallel_starts: int) -> _Changes:
    """Remove containers the layout no longer has, start stopped ones, create missing ones."""
    wanted = {n.name for n in layout.nodes}
    removed = tuple(sorted(c.name for c in existing if c.name not in wanted))
    if removed:
        podman.remove_containers(removed)
        notify(f"removed {len(removed)} container(s): {', '.join(removed)}")
    kept = {c.name: c for c in existing if c.name in wanted}
    restarted = tuple(sorted(name for name, c in kept.items() if c.state != "running"))
    to_create = [n for n in layout.nodes if n.name not in kept]
    check_inotify_room(len(to_create) + len(restarted))
    if restarted:
        podman.start(restarted)
        notify(f"started {len(restarted)} stopped container(s): {', '.join(restarted)}")
    if to_create:
        notify(f"starting {len(to_create)} container(s) on {layout.network}")
        settings.nfs_dir.mkdir(parents=True, exist_ok=True)
        labels = {LABEL_LAB: "1", LABEL_NAME: settings.lab, LABEL_IMAGE_HASH: image.image_hash}
        specs = [container_spec(n, layout, image.image, labels, settings.nfs_dir) for n in to_create]
        parallel(podman.run_container, specs, parallel_starts)
    stale = tuple(sorted(n for n, c in kept.items() if c.labels.get(LABEL_IMAGE_HASH) != image.image_hash))
    return _Changes(tuple(n.name for n in to_create), removed, restarted, stale)


def _inventory_dir(settings: LabSettings, net: NetworkInfo | None) -> Path:
    if settings.inventory_dir is None and net is not None and net.labels.get(LABEL_INVENTORY):
        return Path(net.labels[LABEL_INVENTORY])  # where `lab up` first wrote it
    return settings.default_inventory()


def _check_inventory_dir(directory: Path, lab: str) -> None:
    """Refuse to write into (and later delete) a directory that holds something else."""
    if not directory.exists() or not any(directory.iterdir()):
        return
    marker = directory / MARKER
    owner = marker.read_text().strip() if marker.is_file() else None
    if owner != lab:
        what = f"the inventory of lab {owner!r}" if owner else "files not written by `ufcctl lab up`"
        raise InputError(
            f"{directory} holds {what}",
            "choose another --inventory-dir, or move that directory away",
        )


def _write_files(directory: Path, files: dict[str, str]) -> bool:
    """Make the (lab-owned) directory hold exactly `files`; True when anything changed."""
    changed = False
    if directory.is_dir():
        for path in sorted(directory.rglob("*"), reverse=True):  # children before their directory
            rel = path.relative_to(directory).as_posix()
            if path.is_file() and rel not in files:
                path.unlink()
                changed = True
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    for rel, content in files.items():
        path = directory / rel
        if path.is_file() and path.read_text() == content:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(content)
        partial.replace(path)
        changed = True
    return changed


def lab_down(settings: LabSettings, notify: Notify, remove_images: bool = False,
             podman: Podman | None = None) -> DownResult:
    """Remove the lab's containers, network, inventory and NFS directory; images only if asked."""
    check_lab_name(settings.lab)
    require_tools(["podman"])
    podman = podman or Podman()
    with _lab_lock(settings):
        net = _owned_network(podman, settings.lab)
        inventory_dir = _inventory_dir(settings, net)
        names = tuple(sorted(c.name for c in lab_containers(podman, settings.lab)))
        if names:
            podman.remove_containers(names)
            notify(f"removed {len(names)} container(s)")
        if net is not None:
            podman.remove_network(net.name)
            notify(f"removed network {net.name}")
        removed_inventory = None
        marker = inventory_dir / MARKER
        if marker.is_file() and marker.read_text().strip() == settings.lab:
            shutil.rmtree(inventory_dir)
            removed_inventory = inventory_dir
            notify(f"removed {inventory_dir}")
        shutil.rmtree(settings.nfs_dir, ignore_errors=True)
        lab_image.prune_old_builds(podman)  # builds kept only because these containers ran them
        images: list[str] = []
        kept: dict[str, str] = {}
        if remove_images:
            for ref in (lab_image.NODE_IMAGE, lab_image.BASE_IMAGE):
                if podman.image_id(ref) is None:
                    continue
                reason = podman.remove_image(ref)
                if reason is None:
                    images.append(ref)
                else:
                    kept[ref] = reason
            for tarball in lab_image.rootfs_tarballs(settings.state_path):
                tarball.unlink()
                images.append(str(tarball))
        network = net.name if net else None
        return DownResult(settings.lab, names, network, removed_inventory, tuple(images), kept)


def lab_status(settings: LabSettings, podman: Podman | None = None) -> LabStatus:
    check_lab_name(settings.lab)
    require_tools(["podman"])
    podman = podman or Podman()
    net = _owned_network(podman, settings.lab)
    containers = sorted(
        lab_containers(podman, settings.lab),
        key=lambda c: (c.labels.get(LABEL_ROLE) != ROLE_CONTROL_PLANE, c.name),
    )
    inventory = _inventory_dir(settings, net) if net is not None else None
    return LabStatus(
        lab=settings.lab,
        network=net.name if net else None,
        subnet=net.subnets[0] if net and net.subnets else None,
        inventory_dir=str(inventory) if inventory and (inventory / MARKER).is_file() else None,
        containers=tuple(containers),
    )
