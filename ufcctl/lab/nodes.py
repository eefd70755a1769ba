"""Starting lab containers and making each one reachable: systemd booted, controller key in, host key out."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ufcctl.domain.nfs import backup_store
from ufcctl.errors import EnvironmentMissing, RunFailed
from ufcctl.lab.hostlimits import inotify_usage
from ufcctl.lab.inventory import NFS_EXPORT_DIR
from ufcctl.lab.layout import LabLayout, LabNode, mac_for_ip
from ufcctl.lab.podman import ContainerSpec, Podman
from ufcctl.lab.sshkey import wait_for_sshd

# keepalived's VRRP needs the NET_* set (docs/architecture.md: VIP failover verified with exactly it).
# SYS_PTRACE: root on a real node may read /proc/PID/fd and /proc/PID/exe of every user's process;
# without it root in a container may not for other uids, and preflight could not tell that etcd
# (user etcd) holds its own ports on a second deploy ("a process preflight cannot identify").
# DAC_READ_SEARCH: root on a real node has it, and nfs-ganesha's VFS backend needs it to open files
# by handle (open_by_handle_at(2)); without it every NFSv4 LOOKUP below the export root fails with
# NFS4ERR_PERM (measured, roles/nfs_server).
# The rest lets a node run containers with the real kubelet, containerd and runc
# (docs/reference/real-kubernetes.md §3, each with the error without it): SYS_ADMIN (cgroups and mounts:
# runc, and the node's init rebinding its cgroups), SYS_RESOURCE (the kubelet's and runc's limits),
# SYSLOG (the kubelet's OOM watcher reads /dev/kmsg), MKNOD and AUDIT_WRITE (in the default capability
# set the CRI gives a container; a container cannot get one its node lacks).
CAPABILITIES = ("NET_ADMIN", "NET_RAW", "NET_BROADCAST", "SYS_PTRACE", "DAC_READ_SEARCH",
                "SYS_ADMIN", "SYS_RESOURCE", "SYSLOG", "MKNOD", "AUDIT_WRITE")
# runc needs the cgroup tree writable; the node's init (image/sbin/ufcctl-lab-init) makes the node's own
# cgroups the root of each hierarchy before systemd starts
CGROUP_VOLUME = ("/sys/fs/cgroup", "/sys/fs/cgroup")
DEVICES = ("/dev/kmsg",)
# A node cannot let a container have a device its own device cgroup denies: containerd's default spec
# allows /dev/console (runc: `failed to write "c 5:1 rwm": ... operation not permitted`, measured with
# `ctr run`), and a privileged pod (kube-proxy, calico-node) asks for every device (`failed to write
# "a *:* rwm"`, measured with kubeadm's kube-proxy). The node's /dev holds only podman's device nodes.
DEVICE_CGROUP_RULES = ("a *:* rwm",)
# overlayfs cannot be stacked on the node's overlay root: containerd's snapshots need a volume
CONTAINERD_VOLUME = "/var/lib/containerd"
NODE_INIT = ("/usr/local/sbin/ufcctl-lab-init",)
# A node routes its pods' traffic to the other nodes' pods (the real lab's pod network, podnet.py); the CNI
# bridge plugin writes ip_forward only where it is not already 1, and the node's /proc/sys is read-only
SYSCTLS = (("net.ipv4.ip_forward", "1"),)
LABEL_LAB = "ufcctl.lab"
LABEL_NAME = "ufcctl.lab.name"
LABEL_ROLE = "ufcctl.lab.role"
LABEL_IMAGE_HASH = "ufcctl.image-hash"
LABEL_KUBE = "ufcctl.lab.kube"  # on the lab's network: what runs Kubernetes there (layout.KUBE_MODES)
LABEL_INVENTORY = "ufcctl.lab.inventory"
BOOT_TIMEOUT = 180.0  # seconds for systemd to finish booting one container on a busy 2-core machine
PARALLEL_STARTS = 4  # concurrent `podman run`; see tests/benchmarks/bench_lab_start.py
# inotify instances one booted node holds, all charged to host root (measured: systemd 4,
# systemd-logind 1; one spare). Past fs.inotify.max_user_instances (128 on Debian) systemd
# logs "Failed to create inotify object: Too many open files" and never finishes booting.
INOTIFY_PER_NODE = 6
# The nodes stay under podman's default parent cgroup (libpod_parent), which the host's scheduler weighs
# as one process against the test run's and ansible's processes. A parent of the lab's own weighted 1,024
# cpu.shares per node (7ac44fe, reverted) starved the controller that drives the lab: the full test
# command went from 43 to 70 min and an etcd renewal past its 600 s guard. The lab's nodes mostly wait on
# ansible on the host; they must not outweigh it.

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
                   nfs_dir: Path, etcd_store_dir: Path | None = None) -> ContainerSpec:
    volumes: tuple[tuple[str, str], ...] = (CGROUP_VOLUME,)
    if node.name == layout.nfs_server:  # the dataset export, and the etcd snapshot store where given
        volumes += ((str(nfs_dir), NFS_EXPORT_DIR),)
        if etcd_store_dir is not None:
            volumes += ((str(etcd_store_dir), backup_store.STORE_PATH),)
    return ContainerSpec(
        name=node.name, image=image, network=layout.network, ip=node.ip, mac=mac_for_ip(node.ip),
        labels={**labels, LABEL_ROLE: node.role}, capabilities=CAPABILITIES, volumes=volumes,
        command=NODE_INIT, devices=DEVICES, anonymous_volumes=(CONTAINERD_VOLUME,),
        device_cgroup_rules=DEVICE_CGROUP_RULES, sysctls=SYSCTLS,
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


# Run inside a node with `sh -c PREPARE_SCRIPT sh GATEWAY TIMEOUT`, the controller's public key on
# stdin. One exec per node: podman calls cost about a second each on a loaded 2-core machine.
PREPARE_SCRIPT = r"""
set -e
k=$(cat)
end=$(( $(date +%s) + $2 ))
# --wait returns once boot is over; before systemd's bus is up it fails at once, so retry.
while :; do
    s=$(systemctl is-system-running --wait 2>/dev/null || true)
    case "$s" in running|degraded) break ;; esac
    if [ "$(date +%s)" -ge "$end" ]; then echo "state=$s"; exit 3; fi
    sleep 0.3
done
echo "state=$s"
if [ "$s" = degraded ]; then
    systemctl list-units --failed --plain --no-legend | awk '{print "failed=" $1}'
fi
# Append only when missing: roles may add their own keys and must keep them across `lab up`.
umask 077
mkdir -p /root/.ssh
touch /root/.ssh/authorized_keys
grep -qxF "$k" /root/.ssh/authorized_keys || printf '%s\n' "$k" >> /root/.ssh/authorized_keys
# A container recreated on an IP an earlier one used has a new MAC, and the host keeps the old
# neighbour entry for ~35 s (measured). An ARP request from the container (its own cache
# flushed first) makes the host relearn it at once.
{ ip neigh flush dev eth0; ping -c 1 -W 2 "$1"; } >/dev/null 2>&1 || true
echo "hostkey=$(cat /etc/ssh/ssh_host_ed25519_key.pub 2>/dev/null || true)"
"""


@dataclass(frozen=True)
class Prepared:
    state: str  # systemd's state: running, degraded, or whatever it was when the wait gave up
    failed_units: tuple[str, ...]
    host_key: str | None  # "ssh-ed25519 AAAA...", without the comment


def parse_prepare_output(text: str) -> Prepared:
    state, failed, host_key = "", [], None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key == "state":
            state = value.strip()
        elif key == "failed" and value.strip():
            failed.append(value.strip())
        elif key == "hostkey" and value.startswith("ssh-ed25519 "):
            host_key = " ".join(value.split()[:2])
    return Prepared(state, tuple(failed), host_key)


# podman's states of a container that is not running; "stopping" settles into one of the others.
NOT_RUNNING = ("exited", "stopped", "created", "configured", "initialized", "stopping")


def _settled_state(podman: Podman, name: str, wait: float = 30.0) -> tuple[str, int | None, str]:
    """The container's state once it is no longer "stopping" (podman may still be tearing it down)."""
    end = time.monotonic() + wait
    state = podman.exit_state(name)
    while state[0] == "stopping" and time.monotonic() < end:
        time.sleep(1)
        state = podman.exit_state(name)
    return state


def prepare_node(podman: Podman, name: str, public_key: str, gateway: str,
                 timeout: float = BOOT_TIMEOUT, notify: Callable[[str], None] | None = None) -> NodeReady:
    """Wait for systemd, authorize the controller key, announce the MAC, read the host key.

    A container whose systemd exited before the wait could start (seen in CI with labs booting at
    once: "cannot exec in a stopped container", once with podman still reporting a state other than
    exited) is started once more, saying so; a second exit is an error that carries the container's
    state, exit code and last console lines."""
    proc = podman.exec(name, ["sh", "-c", PREPARE_SCRIPT, "sh", gateway, str(int(timeout))],
                       input_text=public_key + "\n", check=False, timeout=timeout + 30)
    prepared = parse_prepare_output(proc.stdout)
    if prepared.state not in ("running", "degraded"):
        status, code, error = _settled_state(podman, name)
        if status in NOT_RUNNING or "stopped container" in proc.stderr:
            console = podman.logs(name)
            stopped = (f"container {name} is {status} (exit code {code}{'; ' + error if error else ''})"
                       f"; last console line: {console[-1] if console else '(none)'}")
            if notify is not None and status != "missing":
                notify(f"lab: {stopped}; starting it once more")
                podman.start([name])
                return prepare_node(podman, name, public_key, gateway, timeout, notify=None)
            raise RunFailed(stopped, f"look at its console: podman logs {name}", details=console)
        raise RunFailed(
            f"container {name}: systemd did not finish booting within {timeout:.0f}s "
            f"(state {prepared.state or 'unknown'}, container {status}; "
            f"{proc.stderr.strip()[-200:] or 'no error output'})",
            f"look inside: podman exec {name} systemctl list-jobs",
        )
    if proc.returncode != 0 or prepared.host_key is None:
        raise RunFailed(f"container {name}: no SSH host key at /etc/ssh/ssh_host_ed25519_key.pub",
                        f"check the first-boot unit: podman exec {name} systemctl status ufcctl-ssh-hostkeys")
    return NodeReady(name, prepared.host_key, prepared.failed_units)


def make_ready(podman: Podman, node: LabNode, public_key: str, gateway: str,
               notify: Callable[[str], None] | None = None) -> NodeReady:
    ready = prepare_node(podman, node.name, public_key, gateway, notify=notify)
    wait_for_sshd(node.ip, timeout=60)
    return ready
