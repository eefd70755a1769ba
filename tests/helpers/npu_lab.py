"""The shared lab's NPU workers with and without the emulated driver, for the NPU fabric lab test and
tests/benchmarks/bench_marginal.py (kind npu-check): what a driver install leaves on a worker, and how to
put back the driver-less, tainted worker the README's main job leaves."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

from ufcctl.domain.npu.driver_labels import DRIVER_LABEL, FIRMWARE_LABEL

KUBECTL = ["kubectl", "--kubeconfig=/etc/kubernetes/admin.conf"]
TAINT = "ufcctl.io/npu-health-pending"
HOLD = "ufcctl.io/npu-fabric"
MARK = "ufcctl.io/cordoned-for"
HCCN_STATE = "/var/lib/ufc-npu-emulator/hccn.json"
INSTALLS = "/var/lib/ufc-npu-emulator/installs.log"
# What the driver install and the fabric step leave on a worker.
LEFT = ["/usr/local/Ascend/driver", "/usr/local/Ascend/firmware", "/usr/local/Ascend/ufcctl-install.json",
        "/usr/local/sbin/npu-smi", "/etc/ascend_install.info", "/var/cache/ascend_driver", HCCN_STATE,
        "/etc/hccn.conf", "/var/lib/kubelet/ufcctl-npu-admitted", "/etc/ufc-npu-emulator.json",
        "/var/lib/prometheus/node-exporter/ufcctl_npu_fabric.prom"]


def podman_exec(host: str, *argv: str, check: bool = True) -> str:
    proc = subprocess.run(["podman", "exec", host, *argv], capture_output=True, text=True, timeout=120,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"{host}: {' '.join(argv)}: rc {proc.returncode}: {proc.stderr}")
    return proc.stdout


def has_driver(host: str) -> bool:
    return bool(podman_exec(host, "sh", "-c", "test -e /usr/local/Ascend/driver/version.info && echo y",
                            check=False))


def driverless(hosts: list[str]) -> dict[str, str]:
    """The hosts without a driver, each with the emulator's install log as it is (what restore puts back)."""
    return {h: podman_exec(h, "cat", INSTALLS, check=False) for h in hosts if not has_driver(h)}


def restore(before: Mapping[str, str], cp1: str) -> None:
    """The driver-less, tainted workers the README's main job leaves (only those listed in `before`):
    the driver and the fabric's files removed, the install log as it was (other modules count installs),
    the NPU health taint back, the driver labels the admission set removed, and a cordon ufcctl's fabric
    hold made lifted."""
    for host, installs in before.items():
        podman_exec(host, "rm", "-rf", *LEFT, check=False)
        if installs:
            subprocess.run(["podman", "exec", "-i", host, "sh", "-c", f"cat > {INSTALLS}"], input=installs,
                           text=True, timeout=60, check=False)
        else:
            podman_exec(host, "rm", "-f", INSTALLS, check=False)
        podman_exec(host, "rmdir", "--ignore-fail-on-non-empty", "/var/lib/ufc-npu-emulator", check=False)
        podman_exec(cp1, *KUBECTL, "taint", "nodes", host, f"{TAINT}=true:NoSchedule", "--overwrite",
                    check=False)
        podman_exec(cp1, *KUBECTL, "annotate", "node", host, f"{HOLD}-", check=False)
        podman_exec(cp1, *KUBECTL, "label", "node", host, f"{DRIVER_LABEL}-", f"{FIRMWARE_LABEL}-",
                    check=False)
        marks = podman_exec(cp1, *KUBECTL, "get", "node", host, "-o",
                            "jsonpath={.metadata.annotations.ufcctl\\.io/cordoned-for}", check=False)
        if marks.strip() == "npu-fabric":
            podman_exec(cp1, *KUBECTL, "uncordon", host)
            podman_exec(cp1, *KUBECTL, "annotate", "node", host, f"{MARK}-")
