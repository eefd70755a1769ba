"""The kubectl adapter: node maintenance (NPU pods on a node, nodes by label, cordon, drain, uncordon) and
the whole-cluster lists a readiness check reads (Nodes, workloads), one call each."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ufcctl.domain.rollout.cordon import CORDON_MARK  # the annotation, shared with roles/k8s_manifests
from ufcctl.errors import RunFailed

# Extended resources of the Ascend device plugin (docs/reference/ascend.md §3): a pod requesting any
# of them is an NPU pod; vNPU templates such as huawei.com/Ascend910-4c share the prefix.
NPU_RESOURCE_PREFIX = "huawei.com/"

Command = Callable[[Sequence[str], int], tuple[int, str, str]]  # argv, timeout -> rc, stdout, stderr


def _run(argv: Sequence[str], timeout: int) -> tuple[int, str, str]:
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        # a failure like any other (RunFailed from _call), never a traceback: an apiserver that does not
        # answer is what a readiness check and `ufcctl health` must report
        return 124, "", f"no answer within {timeout} s"
    except OSError as err:  # the binary went away or cannot run
        return 127, "", str(err)
    return proc.returncode, proc.stdout, proc.stderr


def find_kubeconfig(env: dict[str, str] | None = None, home: Path | None = None) -> Path | None:
    """The kubeconfig kubectl would use: the first existing file of $KUBECONFIG, else ~/.kube/config."""
    env = dict(os.environ) if env is None else env
    if env.get("KUBECONFIG"):
        for part in env["KUBECONFIG"].split(os.pathsep):
            if part and Path(part).is_file():
                return Path(part)
        return None
    default = (home or Path.home()) / ".kube" / "config"
    return default if default.is_file() else None


def find_kubectl() -> str | None:
    """kubectl on PATH, else one installed beside ufcctl's Python (a kubectl wheel in its environment)."""
    found = shutil.which("kubectl")
    if found:
        return found
    beside = Path(sys.executable).parent / "kubectl"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def operator_kubectl(unread: str = "", cluster: Path | None = None) -> tuple[Kubectl | None, str]:
    """kubectl with the cluster's own kubeconfig (`cluster`, when that file exists: the admin.conf deploy
    keeps beside the cluster's CA), else the operator's, and that kubeconfig's path; or None and why not
    (`unread` appended when there is no kubeconfig: what the caller could therefore not read)."""
    kubeconfig = cluster if cluster is not None and cluster.is_file() else find_kubeconfig()
    if kubeconfig is None:
        return None, "no kubeconfig (KUBECONFIG unset or missing, no ~/.kube/config)" + unread
    binary = find_kubectl()
    if binary is None:
        return None, f"kubectl is not installed (a kubeconfig exists: {kubeconfig})"
    return Kubectl(binary, kubeconfig), str(kubeconfig)


class Kubectl:
    def __init__(self, binary: str, kubeconfig: Path, *, command: Command = _run, timeout: int = 600):
        self.base = [binary, "--kubeconfig", str(kubeconfig)]
        self.command = command
        self.timeout = timeout

    def _call(self, *args: str, timeout: int | None = None) -> str:
        rc, out, err = self.command([*self.base, *args], timeout or self.timeout)
        if rc != 0:
            raise RunFailed(f"kubectl {' '.join(args[:3])} failed (rc {rc}): {err.strip()[:300]}")
        return out

    def npu_pods(self, node: str) -> list[str]:
        """namespace/name of running pods on `node` that request an NPU resource."""
        out = self._call("get", "pods", "--all-namespaces", "--field-selector",
                         f"spec.nodeName={node},status.phase=Running", "-o", "json", timeout=120)
        pods = []
        for pod in json.loads(out or "{}").get("items", []):
            containers = pod.get("spec", {}).get("containers", [])
            wanted = {k for c in containers for section in ("requests", "limits")
                      for k in (c.get("resources", {}).get(section) or {})}
            if any(k.startswith(NPU_RESOURCE_PREFIX) for k in wanted):
                meta = pod.get("metadata", {})
                pods.append(f"{meta.get('namespace', '?')}/{meta.get('name', '?')}")
        return pods

    def kubelet_versions(self) -> dict[str, str]:
        """node name -> the kubelet version its Node object reports."""
        return {str(n.get("metadata", {}).get("name", "?")):
                str(n.get("status", {}).get("nodeInfo", {}).get("kubeletVersion", ""))
                for n in self.list_json("nodes", timeout=120).get("items", [])}

    def list_json(self, resources: str, *, all_namespaces: bool = False,
                  timeout: int = 300) -> dict[str, Any]:
        """One `kubectl get RESOURCES -o json` (kubectl pages through the apiserver itself, 500 at a time),
        parsed: a dict with `items`. RunFailed when kubectl fails or its output is not a JSON object."""
        out = self._call("get", resources, *(["--all-namespaces"] if all_namespaces else []), "-o", "json",
                         f"--request-timeout={timeout}s", timeout=timeout + 30)
        try:
            found = json.loads(out or "{}")
        except ValueError as err:
            raise RunFailed(f"kubectl get {resources}: the output is not JSON ({err})") from err
        if not isinstance(found, dict):
            raise RunFailed(f"kubectl get {resources}: the output is not a JSON object")
        return found

    def nodes_labelled(self, selector: str) -> set[str]:
        """Names of the nodes matching a label selector, filtered by the apiserver (names only come back)."""
        out = self._call("get", "nodes", "--selector", selector, "--output", "name", timeout=120)
        return {line.split("/", 1)[-1] for line in out.split() if line.strip()}

    def cordon_state(self, node: str) -> tuple[bool, str | None]:
        """(whether the node is cordoned, the value of ufcctl's cordon mark on it or None)."""
        found = json.loads(self._call("get", "node", node, "-o", "json", timeout=120) or "{}")
        annotations = found.get("metadata", {}).get("annotations") or {}
        mark = annotations.get(CORDON_MARK)
        return bool(found.get("spec", {}).get("unschedulable")), (str(mark) if mark is not None else None)

    def mark(self, node: str, why: str) -> None:
        self._call("annotate", "node", node, "--overwrite", f"{CORDON_MARK}={why}", timeout=120)

    def unmark(self, node: str) -> None:
        self._call("annotate", "node", node, f"{CORDON_MARK}-", timeout=120)

    def drain(self, node: str, timeout_seconds: int) -> None:
        self._call("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                   f"--timeout={timeout_seconds}s", timeout=timeout_seconds + 60)

    def uncordon(self, node: str) -> None:
        self._call("uncordon", node, timeout=120)
