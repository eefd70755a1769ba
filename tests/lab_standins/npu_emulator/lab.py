"""The emulator in a running lab: an HTTP package mirror container, per-node fault files and counters.

The mirror is one more container on the lab's own podman network (same image, `python3 -m
http.server` over a read-only bind mount of the packages), so nodes download over HTTP inside the
lab and nothing is sent anywhere else. `ufcctl lab up` runs `setup` (as a process, through
`python -m tests.lab_standins.npu_emulator`) with the lab's labels, so `ufcctl lab down` removes the
mirror with
the lab. Fault files and counters are read and written with `podman exec`, the way a test reaches
into a node without going through Ansible.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.lab_standins.kube_emulator import packages as kube_packages
from tests.lab_standins.npu_emulator.packages import RELEASES, Release, build, build_docker_runtime

# The emulator may use ufcctl (never the other way round): the same podman settings as the lab.
from ufcctl.lab.podman import CONTAINERS_CONF

IMAGE = "localhost/ufcctl-node:bookworm"
FAULTS = "/etc/ufc-npu-emulator.json"
INSTALLS = "/var/lib/ufc-npu-emulator/installs.log"
MIRROR_PORT = 8080
MIRROR_OFFSET = 5  # subnet address + 5: below the lab's control planes (+11) and workers (+21)
LABEL_INVENTORY = "ufcctl.lab.inventory"  # set by `ufcctl lab up` on the lab network
LABEL_MIRROR = "ufcctl.npu-emulator"
# What the running mirror was started with (IP, package directory, image): other settings recreate it.
LABEL_MIRROR_CONFIG = "ufcctl.npu-emulator.config"


def _env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


def podman(*args: str, check: bool = True, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = _env()
    proc = subprocess.run(["podman", *args], env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:3])} failed: {proc.stderr.strip()[:500]}")
    return proc


@dataclass(frozen=True)
class Mirror:
    name: str
    url: str  # base URL of the packages, e.g. http://10.89.64.5:8080/hdk
    changed: bool = True  # False: the mirror was already running with these settings

    @property
    def root(self) -> str:
        """The artifact URL (ufc_artifact_url): hdk/, mindcluster/ and kubernetes/ below it."""
        return self.url.rsplit("/", 1)[0]


def network_of(lab_network: str) -> tuple[str, dict[str, str]]:
    """(subnet, labels) of a podman network."""
    data = json.loads(podman("network", "inspect", lab_network).stdout)[0]
    return data["subnets"][0]["subnet"], data.get("labels") or {}


def mirror_ip(subnet: str) -> str:
    return str(ipaddress.ip_network(subnet).network_address + MIRROR_OFFSET)


def _container(name: str) -> tuple[str, dict[str, str]] | None:
    """(state, labels) of a container, or None when there is none of that name."""
    proc = podman("container", "inspect", name, check=False)
    if proc.returncode != 0:
        return None
    data = json.loads(proc.stdout)[0]
    return data["State"]["Status"], (data.get("Config") or {}).get("Labels") or {}


def start_mirror(lab_network: str, directory: Path, name: str, ip: str | None = None, image: str = IMAGE,
                 labels: Mapping[str, str] | None = None) -> Mirror:
    """Serve `directory` as /hdk from a container on the lab network; a mirror already running with
    the same settings and labels is kept (so a second `ufcctl lab up` changes nothing)."""
    ip = ip or mirror_ip(network_of(lab_network)[0])
    url = f"http://{ip}:{MIRROR_PORT}/hdk"
    wanted = {**(labels or {}), LABEL_MIRROR: "mirror",
              LABEL_MIRROR_CONFIG: f"{lab_network} {ip} {directory.resolve().parent} {image}"}
    found = _container(name)
    if found is not None and wanted.items() <= found[1].items():
        if found[0] == "running":
            return Mirror(name, url, changed=False)
        podman("start", name)  # stopped (a host reboot): same container, same settings
    else:
        podman("rm", "-f", "-t", "0", name, check=False)
        label_args = [arg for key, value in wanted.items() for arg in ("--label", f"{key}={value}")]
        podman("run", "-d", "--name", name, "--network", lab_network, "--ip", ip, *label_args,
               "-v", f"{directory.resolve().parent}:/srv/mirror:ro", image,
               "python3", "-m", "http.server", str(MIRROR_PORT), "--bind", ip, "--directory", "/srv/mirror")
    for _ in range(60):
        probe = podman("exec", name, "python3", "-c",
                       f"import urllib.request; urllib.request.urlopen('{url}/SHA256SUMS', timeout=2)",
                       check=False)
        if probe.returncode == 0:
            return Mirror(name, url)
        time.sleep(0.5)
    raise RuntimeError(f"mirror {name} did not answer on {url}")


def stop_mirror(name: str) -> None:
    podman("rm", "-f", name, check=False)


def write_faults(container: str, faults: Mapping[str, Any] | None) -> None:
    """Set the node's emulator faults (None removes the file: 8 healthy chips, instant installs)."""
    if faults is None:
        podman("exec", container, "rm", "-f", FAULTS)
    else:
        _write(container, FAULTS, json.dumps(dict(faults)))


def _write(container: str, path: str, text: str) -> None:
    proc = subprocess.run(["podman", "exec", "-i", container, "sh", "-c", f"cat > {path}"], input=text,
                          env=_env(), capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"writing {path} on {container} failed: {proc.stderr.strip()}")


def set_installed(container: str, release: Release) -> None:
    """Rewrite the versions the node reports as installed, as if `release` were installed.

    Benchmarks use it to start every measured run from the same state (every node one release
    behind its target) without paying an install; the node must have had a real (emulated)
    install before, which put npu-smi and the version files in place.
    """
    script = "".join(
        f"sed -i 's/^Version=.*/Version={version}/' /usr/local/Ascend/{kind}/version.info && "
        for kind, version in (("driver", release.driver_version), ("firmware", release.firmware_version))
    ) + "true"
    podman("exec", container, "sh", "-c", script)


def installs(container: str) -> list[tuple[str, str, str]]:
    """(kind, version, mode) of every completed install on the node, oldest first."""
    proc = podman("exec", container, "cat", INSTALLS, check=False)
    return [tuple(line.split()[:3]) for line in proc.stdout.splitlines() if line.strip()]  # type: ignore[misc]


def npu_node_vars(mirror: Mirror, release: Release, install_timeout: int = 300) -> dict[str, Any]:
    """group_vars for npu_node pointing the ascend_driver role at the mirror and a release."""
    return {
        "ascend_driver_artifact_url": mirror.url,
        "ufc_npu_driver_version": release.driver_version,
        "ufc_npu_firmware_version": release.firmware_version,
        "ascend_driver_install_timeout": install_timeout,
    }


def write_inventory_vars(inventory: Path, mirror: Mirror, release: Release = RELEASES[0]) -> Path:
    """<inventory>/group_vars/npu_node.yml for the emulator, when it runs without `ufcctl lab up`
    (which writes that file itself, as part of the inventory it owns)."""
    target = inventory / "group_vars" / "npu_node.yml"
    target.parent.mkdir(parents=True, exist_ok=True)
    header = "# Written by tests/lab_standins/npu_emulator (the lab NPU emulator, not Huawei software).\n"
    lines = "".join(f"{k}: {json.dumps(v)}\n" for k, v in npu_node_vars(mirror, release).items())
    target.write_text(header + lines)
    return target


def prepare(lab_network: str, workdir: Path, name: str, releases: Sequence[Release] = RELEASES,
            ip: str | None = None, image: str = IMAGE, labels: Mapping[str, str] | None = None,
            kube_emulator: bool = True) -> Mirror:
    """Build the packages into <workdir>/hdk (the HDK), <workdir>/mindcluster (the Ascend Docker Runtime)
    and, unless the lab runs the real Kubernetes, <workdir>/kubernetes (the LAB KUBE EMULATOR's kubeadm and
    kubelet), and start (or keep) the mirror serving <workdir>."""
    build(workdir / "hdk", list(releases))
    build_docker_runtime(workdir / "mindcluster")
    if kube_emulator:
        kube_packages.build(workdir)
    return start_mirror(lab_network, workdir / "hdk", name, ip, image, labels)


def setup_lab(lab_network: str, workdir: Path, name: str, inventory: Path | None = None,
              releases: Sequence[Release] = RELEASES) -> tuple[Mirror, Path]:
    """Build packages, start the mirror and write <inventory>/group_vars/npu_node.yml."""
    mirror = prepare(lab_network, workdir, name, releases)
    if inventory is None:
        _, labels = network_of(lab_network)
        if LABEL_INVENTORY not in labels:
            raise RuntimeError(f"network {lab_network} has no {LABEL_INVENTORY} label: pass the inventory")
        inventory = Path(labels[LABEL_INVENTORY])
    return mirror, write_inventory_vars(inventory, mirror, releases[0])
