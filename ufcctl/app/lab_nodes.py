"""Starting lab containers and making each one reachable: systemd booted, controller key in, host key out."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ufcctl.app.lab_inventory import NFS_EXPORT_DIR
from ufcctl.app.lab_layout import LabLayout, LabNode, mac_for_ip
from ufcctl.engine.hostlimits import inotify_usage
from ufcctl.engine.podman import ContainerSpec, Podman
from ufcctl.engine.sshkey import wait_for_sshd
from ufcctl.errors import EnvironmentMissing, RunFailed

# keepalived's VRRP needs these (ARCHITECTURE.md: VIP failover verified with exactly this set).
# No CAP_SYS_ADMIN: units that insist on bind mounts get a drop-in in the image instead.
CAPABILITIES = ("NET_ADMIN", "NET_RAW", "NET_BROADCAST")
LABEL_LAB = "ufcctl.lab"
LABEL_NAME = "ufcctl.lab.name"
LABEL_ROLE = "ufcctl.lab.role"
LABEL_IMAGE_HASH = "ufcctl.image-hash"
LABEL_INVENTORY = "ufcctl.lab.inventory"
BOOT_TIMEOUT = 180.0  # seconds for systemd to finish booting one container on a busy 2-core machine
PARALLEL_STARTS = 4  # concurrent `podman run`; see tests/benchmarks/bench_lab_start.py
# inotify instances one booted node holds, all charged to host root (measured: systemd 4,
# systemd-logind 1; one spare). Past fs.inotify.max_user_instances (128 on Debian) systemd
# logs "Failed to create inotify object: Too many open files" and never finishes booting.
INOTIFY_PER_NODE = 6

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class NodeReady:
    name: str
    host_key: str  # "ssh-ed25519 AAAA..."
    failed_units: tuple[str, ...]  # systemd reported "degraded": these units failed


def parallel(func: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """Run func over items with up to `workers` threads; the first exception propagates."""
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(items)))) as pool:
        return list(pool.map(func, items))


def container_spec(node: LabNode, layout: LabLayout, image: str, labels: Mapping[str, str],
                   nfs_dir: Path) -> ContainerSpec:
    volumes = ((str(nfs_dir), NFS_EXPORT_DIR),) if node.name == layout.nfs_server else ()
    return ContainerSpec(
        name=node.name, image=image, network=layout.network, ip=node.ip, mac=mac_for_ip(node.ip),
        labels={**labels, LABEL_ROLE: node.role}, capabilities=CAPABILITIES, volumes=volumes,
    )


def check_inotify_room(starting: int) -> None:
    """Refuse to start containers whose systemd could not finish booting (clear error instead of a hang)."""
    if starting <= 0:
        return
    usage = inotify_usage()
    need = usage.in_use + INOTIFY_PER_NODE * starting
    if need > usage.limit:
        raise EnvironmentMissing(
            f"starting {starting} lab container(s) needs about {need} inotify instances for root, but "
            f"fs.inotify.max_user_instances is {usage.limit} ({usage.in_use} in use)",
            f"raise the limit: sysctl -w fs.inotify.max_user_instances={max(1024, 2 * need)} "
            "(persist it in /etc/sysctl.d/); each systemd container holds about 5",
        )


def wait_booted(podman: Podman, name: str, timeout: float = BOOT_TIMEOUT) -> tuple[str, ...]:
    """Block until systemd in `name` finished booting; returns the failed units if it is degraded."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        # --wait returns once boot is over; before systemd's bus is up it fails at once, so retry.
        proc = podman.exec(name, ["systemctl", "is-system-running", "--wait"], check=False,
                           timeout=max(5.0, deadline - time.monotonic()))
        last = proc.stdout.strip() or proc.stderr.strip()
        if last == "running":
            return ()
        if last == "degraded":
            failed = podman.exec(name, ["systemctl", "list-units", "--failed", "--plain", "--no-legend"],
                                 check=False)
            return tuple(line.split()[0] for line in failed.stdout.splitlines() if line.strip())
        time.sleep(0.3)
    raise RunFailed(f"container {name}: systemd did not finish booting within {timeout:.0f}s (last: {last})",
                    f"look inside: podman exec {name} systemctl list-jobs")


def install_key_and_read_host_key(podman: Podman, name: str, public_key: str, gateway: str) -> str:
    """One exec per node: authorize the controller key, announce the MAC, print the host key."""
    script = (
        # Append only when missing: roles may add their own keys and must keep them across `lab up`.
        'set -e; k=$(cat); umask 077; mkdir -p /root/.ssh; f=/root/.ssh/authorized_keys; touch "$f"; '
        'grep -qxF "$k" "$f" || printf "%s\\n" "$k" >> "$f"; '
        # A container recreated on an IP an earlier one used has a new MAC, and the host keeps the
        # old neighbour entry for ~35 s (measured). An ARP request from the container (its own
        # cache flushed first) makes the host relearn it at once.
        f"{{ ip neigh flush dev eth0; ping -c 1 -W 2 {gateway}; }} >/dev/null 2>&1 || true; "
        "cat /etc/ssh/ssh_host_ed25519_key.pub"
    )
    proc = podman.exec(name, ["sh", "-c", script], input_text=public_key + "\n", check=False)
    if proc.returncode != 0 or not proc.stdout.startswith("ssh-ed25519 "):
        raise RunFailed(f"container {name}: no SSH host key at /etc/ssh/ssh_host_ed25519_key.pub",
                        f"check the first-boot unit: podman exec {name} systemctl status ufcctl-ssh-hostkeys")
    return " ".join(proc.stdout.split()[:2])


def make_ready(podman: Podman, node: LabNode, public_key: str, gateway: str) -> NodeReady:
    failed = wait_booted(podman, node.name)
    host_key = install_key_and_read_host_key(podman, node.name, public_key, gateway)
    wait_for_sshd(node.ip, timeout=60)
    return NodeReady(node.name, host_key, failed)
