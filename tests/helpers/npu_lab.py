"""The shared lab's NPU workers with and without the emulated driver, for the NPU fabric lab test and
tests/benchmarks/bench_marginal.py (kind npu-check): what a driver install leaves on a worker, and how to
put back the driver-less, tainted worker the README's main job leaves."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

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
        if marks.strip() in ("npu-fabric", "npu-driver"):  # the fabric hold, or a drain of the play
            podman_exec(cp1, *KUBECTL, "uncordon", host)
            podman_exec(cp1, *KUBECTL, "annotate", "node", host, f"{MARK}-")


# the Deployment whose pods show a drain (bench_marginal.py, the lab test); a name of its own per use, since
# the LAB API STAND-IN keeps each pod slot's eviction count (and the replacement's node) by name
PROBE = "ufc-drain-probe"


def _kubectl_json(cp1: str, *args: str) -> dict:
    return json.loads(podman_exec(cp1, *KUBECTL, *args, "-o", "json"))


def movable_pods(cp1: str, workers: list[str]) -> dict[str, str]:
    """uid -> node of the pods on the workers that a drain evicts (not DaemonSet pods)."""
    items = _kubectl_json(cp1, "get", "pods", "-A")["items"]
    return {p["metadata"]["uid"]: p["spec"]["nodeName"] for p in items
            if p["spec"].get("nodeName") in workers
            and not any(o.get("kind") == "DaemonSet" for o in p["metadata"].get("ownerReferences") or [])}


@contextmanager
def probe_pods(cp1: str, workers: list[str]) -> Iterator[dict[str, str]]:
    """One pod of a Deployment on each worker (hostname anti-affinity, the NPU health taint tolerated), so a
    drain has something to evict; yields movable_pods once every worker has its pod; deleted after."""
    name = f"{PROBE}-{os.getpid()}-{int(time.time())}"
    on_workers = {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": workers}]}]}
    one_each = [{"labelSelector": {"matchLabels": {"app": name}}, "topologyKey": "kubernetes.io/hostname"}]
    manifest = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": len(workers), "selector": {"matchLabels": {"app": name}}, "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": on_workers},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": one_each}},
                "tolerations": [{"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1"}]}}}}
    subprocess.run(["podman", "exec", "-i", cp1, *KUBECTL, "apply", "-f", "-"], input=json.dumps(manifest),
                   text=True, capture_output=True, timeout=120, check=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            pods = movable_pods(cp1, workers)
            if sorted(pods.values()) == sorted(workers) or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert sorted(pods.values()) == sorted(workers), f"probe pods not on every worker: {pods}"
        yield pods
    finally:
        podman_exec(cp1, *KUBECTL, "delete", "deployment", name, "-n", "default", "--wait=true", check=False)


class CordonWatch:
    """Polls the Nodes every second while it is entered: the workers ever seen unschedulable (`seen`)."""

    def __init__(self, cp1: str, workers: list[str]):
        self.cp1, self.workers, self.seen = cp1, workers, set[str]()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while True:
            try:
                nodes = _kubectl_json(self.cp1, "get", "nodes")["items"]
            except (AssertionError, ValueError):
                nodes = []
            self.seen |= {n["metadata"]["name"] for n in nodes
                          if n["metadata"]["name"] in self.workers and n["spec"].get("unschedulable")}
            if self.stop.wait(1.0):
                return

    def __enter__(self) -> CordonWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
