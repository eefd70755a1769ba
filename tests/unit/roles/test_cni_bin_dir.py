"""Issue 44, D9: containerd looks for CNI plugins in the directory where Calico's install-cni puts them.

install-cni copies calico and calico-ipam into whatever the calico-node DaemonSet mounts at
/host/opt/cni/bin (roles/cni); containerd 1.6's CRI searches only its `bin_dir` (roles/container_runtime,
ufcctl/domain/runtime/containerd.py). With Debian's /usr/lib/cni every sandbox failed "failed to find
plugin calico".
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ufcctl.domain.runtime.containerd import ContainerdSettings

ROOT = Path(__file__).resolve().parents[3]


def _calico_bin_host_path() -> str:
    text = (ROOT / "roles" / "cni" / "templates" / "manifests" / "40-calico-node.yaml.j2").read_text()
    mounts = [line for line in text.splitlines() if "mountPath: /host/opt/cni/bin" in line]
    (mount,) = mounts
    volume = yaml.safe_load(mount.strip().removeprefix("- "))["name"]
    (line,) = [s for s in text.splitlines() if f"name: {volume}, hostPath:" in s]
    return str(yaml.safe_load(line.strip().removeprefix("- "))["hostPath"]["path"])


def test_containerd_searches_where_calico_installs() -> None:
    calico = _calico_bin_host_path()
    assert calico == "/opt/cni/bin"
    defaults = yaml.safe_load((ROOT / "roles" / "container_runtime" / "defaults" / "main.yml").read_text())
    assert defaults["container_runtime_cni_bin_dir"] == calico
    assert ContainerdSettings(sandbox_image="p").cni_bin_dir == calico

