"""Use cases of the container lab: up (create or reconcile), down (remove exactly what up made), status.

A lab is its nodes (control planes and workers, the inventory's hosts) plus the containers of the
lab's emulators (the NPU emulator's package mirror); all carry the lab's labels, and `lab down`
removes both kinds. The settings and the results the commands print are settings.py's.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ufcctl.engine.files import open_lock, write_file
from ufcctl.errors import InputError, RunFailed
from ufcctl.lab import image as node_image
from ufcctl.lab.inventory import MARKER, InventoryPaths, render_inventory
from ufcctl.lab.layout import (
    DEFAULT_KUBE,
    DEFAULT_SUBNET,
    DEFAULT_WORKERS,
    KUBE_REAL,
    ROLE_CONTROL_PLANE,
    ROLE_NPU_MIRROR,
    ROLE_WORKER,
    LabLayout,
    check_lab_name,
    container_prefix,
    network_name,
    parse_subnet,
    plan_layout,
)
from ufcctl.lab.nodes import (
    LABEL_IMAGE_HASH,
    LABEL_INVENTORY,
    LABEL_KUBE,
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
from ufcctl.lab.npu import prepare_npu_emulator, write_npu_wiring
from ufcctl.lab.podman import ContainerInfo, NetworkInfo, Podman, require_tools
from ufcctl.lab.podnet import write_pod_network
from ufcctl.lab.settings import DownResult, LabSettings, LabStatus, UpResult
from ufcctl.lab.sshkey import ensure_keypair

Notify = Callable[[str], None]


@contextmanager
def _lab_lock(settings: LabSettings) -> Iterator[None]:
    # One lock for every lab of this state directory (not one per lab): `lab down` then leaves no
    # file named after the lab, and a lock file is never deleted while someone may wait on it.
    fd = open_lock(settings.state_path / "labs.lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


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
    """The lab's containers, nodes and emulators: both labels set and the lab's name prefix, nothing else."""
    prefix = container_prefix(lab)
    return [
        c for c in podman.containers(label=f"{LABEL_NAME}={lab}", network=network_name(lab))
        if c.labels.get(LABEL_LAB) == "1" and c.labels.get(LABEL_NAME) == lab and c.name.startswith(prefix)
    ]


def lab_nodes(containers: list[ContainerInfo]) -> list[ContainerInfo]:
    """The lab's nodes among its containers: what the layout plans and the inventory lists."""
    return [c for c in containers if c.labels.get(LABEL_ROLE) != ROLE_NPU_MIRROR]


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
    wanted = {n.name for n in layout.nodes} | {layout.npu_mirror.name}
    foreign = sorted(c.name for c in podman.containers() if c.name in wanted and c.name not in ours)
    if foreign:
        raise InputError(
            f"container name(s) {', '.join(foreign)} are taken by containers `ufcctl lab` did not create",
            "remove them (podman rm -f NAME) or choose another lab name with --lab",
        )


def build_image(settings: LabSettings, notify: Notify, force: bool = False,
                podman: Podman | None = None) -> node_image.ImageResult:
    """`ufcctl lab image`: the node image, built only when its inputs changed (or when forced)."""
    return node_image.ensure_image(podman or Podman(), settings.state_path, notify, force=force)


def _choose_kube(net: NetworkInfo | None, kube: str | None) -> str:
    """The lab's mode: the running lab's (a network label; labs made before the modes are emulated), or
    the one asked for; asking a running lab for another is refused."""
    if net is None:
        return kube or DEFAULT_KUBE
    current = net.labels.get(LABEL_KUBE, DEFAULT_KUBE)
    if kube is not None and kube != current:
        raise InputError(f"lab network {net.name} runs --kube {current}, not {kube}",
                         "run `ufcctl lab down` first to change what runs Kubernetes in the lab")
    return current


def lab_up(settings: LabSettings, notify: Notify, workers: int | None = None, subnet: str | None = None,
           podman: Podman | None = None, parallel_starts: int = PARALLEL_STARTS,
           kube: str | None = None) -> UpResult:
    """Create the lab, or reconcile a running one to the requested shape; rerunning is a no-op."""
    check_lab_name(settings.lab)
    if subnet is not None:
        parse_subnet(subnet)  # bad flags fail before anything is touched
    require_tools(["podman", "runc", "netavark", "ssh-keygen"])
    podman = podman or Podman()
    seconds: dict[str, float] = {}
    with _lab_lock(settings):
        net = _owned_network(podman, settings.lab)
        ours = lab_containers(podman, settings.lab)
        existing = lab_nodes(ours)
        n_workers, subnet = _choose_shape(net, existing, workers, subnet)
        kube = _choose_kube(net, kube)
        layout = plan_layout(settings.lab, n_workers, subnet)
        _check_foreign_names(podman, layout, {c.name for c in ours})
        inventory_dir = _inventory_dir(settings, net)
        _check_inventory_dir(inventory_dir, settings.lab)

        t0 = time.monotonic()
        image = node_image.ensure_image(podman, settings.state_path, notify)
        seconds["image"] = time.monotonic() - t0
        public_key = ensure_keypair(settings.private_key)
        if net is None:
            labels = {LABEL_LAB: "1", LABEL_NAME: settings.lab, LABEL_INVENTORY: str(inventory_dir),
                      LABEL_KUBE: kube}
            podman.create_network(layout.network, layout.subnet, labels)
            notify(f"created network {layout.network} ({layout.subnet})")

        t0 = time.monotonic()
        changes = _reconcile_containers(podman, settings, layout, existing, image, notify, parallel_starts)
        seconds["start"] = time.monotonic() - t0

        # While the nodes boot: the emulator needs only the network and the image.
        t0 = time.monotonic()
        npu = prepare_npu_emulator(settings.lab, layout, settings.npu_emulator_dir, image.image, kube)
        if npu.status != "skipped":
            seconds["npu emulator"] = time.monotonic() - t0

        t0 = time.monotonic()
        notify(f"waiting for {len(layout.nodes)} node(s) to boot and answer SSH")
        ready: list[NodeReady] = parallel(
            lambda n: make_ready(podman, n, public_key, layout.gateway, notify), list(layout.nodes), 16
        )
        seconds["ready"] = time.monotonic() - t0
        if npu.status == "ready":  # every chip cabled as its fabric plan expects (hccn_tool LLDP)
            write_npu_wiring(podman, layout)
        if kube == KUBE_REAL:
            write_pod_network(podman, layout)
        files = render_inventory(
            layout, InventoryPaths(inventory_dir, settings.private_key), {r.name: r.host_key for r in ready},
            npu.node_vars, npu.all_vars, monitoring=settings.monitoring, kube=kube,
        )
        changed = _write_files(inventory_dir, files)
        if npu.error is not None:
            raise RunFailed(
                f"lab {settings.lab!r}: the nodes are up and {inventory_dir} is written, but the NPU "
                f"emulator failed: {npu.error.message}",
                f"{npu.error.hint or 'fix it'}; then rerun `ufcctl lab up` (it keeps what is up)",
                details=npu.error.details,
            )
        return UpResult(
            layout=layout, inventory_dir=inventory_dir, created=changes.created, removed=changes.removed,
            restarted=changes.restarted, inventory_changed=changed, image=image, seconds=seconds,
            stale_image=changes.stale_image,
            degraded={r.name: r.failed_units for r in ready if r.failed_units},
            npu_emulator=npu, kube=kube,
        )


@dataclass(frozen=True)
class _Changes:
    created: tuple[str, ...]
    removed: tuple[str, ...]
    restarted: tuple[str, ...]
    stale_image: tuple[str, ...]  # kept containers that run an older build of the image


def _reconcile_containers(podman: Podman, settings: LabSettings, layout: LabLayout,
                          existing: list[ContainerInfo], image: node_image.ImageResult, notify: Notify,
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
        settings.etcd_store_dir.mkdir(parents=True, exist_ok=True)
        labels = {LABEL_LAB: "1", LABEL_NAME: settings.lab, LABEL_IMAGE_HASH: image.image_hash}
        specs = [container_spec(n, layout, image.image, labels, settings.nfs_dir, settings.etcd_store_dir)
                 for n in to_create]
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
        write_file(path, content)  # 0600 under 0700 parents: host vars may hold secrets
        changed = True
    return changed


def lab_down(settings: LabSettings, notify: Notify, remove_images: bool = False,
             podman: Podman | None = None) -> DownResult:
    """Remove the lab's containers (nodes and emulators), network, inventory, NFS and emulator
    directories; images only if asked. Rerunning it is a no-op."""
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
            _check_network_empty(podman, net.name)
            podman.remove_network(net.name)
            notify(f"removed network {net.name}")
        removed_inventory = None
        marker = inventory_dir / MARKER
        if marker.is_file() and marker.read_text().strip() == settings.lab:
            shutil.rmtree(inventory_dir)
            removed_inventory = inventory_dir
            notify(f"removed {inventory_dir}")
        shutil.rmtree(settings.nfs_dir, ignore_errors=True)
        shutil.rmtree(settings.etcd_store_dir, ignore_errors=True)
        shutil.rmtree(settings.npu_emulator_dir, ignore_errors=True)
        node_image.prune_old_builds(podman)  # builds kept only because these containers ran them
        images: list[str] = []
        kept: dict[str, str] = {}
        if remove_images:
            for ref in (node_image.NODE_IMAGE, node_image.BASE_IMAGE):
                if podman.image_id(ref) is None:
                    continue
                reason = podman.remove_image(ref)
                if reason is None:
                    images.append(ref)
                else:
                    kept[ref] = reason
            for tarball in node_image.rootfs_tarballs(settings.state_path):
                tarball.unlink()
                images.append(str(tarball))
        network = net.name if net else None
        return DownResult(settings.lab, names, network, removed_inventory, tuple(images), kept)


def _check_network_empty(podman: Podman, network: str) -> None:
    """podman refuses to remove a network still in use; name what uses it instead of its message."""
    left = podman.containers_on(network)
    if left:
        raise RunFailed(
            f"network {network} is still used by container(s) `ufcctl lab` did not create: {', '.join(left)}",
            f"remove them (podman rm -f {' '.join(left)}) and rerun `ufcctl lab down`",
        )


def _status_order(container: ContainerInfo) -> tuple[int, str]:
    role = container.labels.get(LABEL_ROLE)
    return (0 if role == ROLE_CONTROL_PLANE else 1 if role == ROLE_WORKER else 2), container.name


def lab_status(settings: LabSettings, podman: Podman | None = None) -> LabStatus:
    check_lab_name(settings.lab)
    require_tools(["podman"])
    podman = podman or Podman()
    net = _owned_network(podman, settings.lab)
    containers = sorted(lab_containers(podman, settings.lab), key=_status_order)
    inventory = _inventory_dir(settings, net) if net is not None else None
    return LabStatus(
        lab=settings.lab,
        network=net.name if net else None,
        subnet=net.subnets[0] if net and net.subnets else None,
        inventory_dir=str(inventory) if inventory and (inventory / MARKER).is_file() else None,
        containers=tuple(containers),
    )
