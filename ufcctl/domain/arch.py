"""The CPU architecture names ufcctl uses (issue 44, D12): one module of constants below every domain
package, so the inventory's rule (domain/inventory/arch.py), the node labels (domain/addons/labels.py)
and the pre-apply plan (domain/manifests/preapply.py) share them without tying those packages together."""

from __future__ import annotations

ARCH_VAR = "ufc_arch"
DEFAULT_ARCH = "amd64"
# Kubernetes' name -> the kernel's (`uname -m`, Ansible's ansible_architecture)
MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}
# The `host-arch` node label MindCluster's Volcano plugin and Ascend Operator select on
HOST_ARCH_LABELS = {"amd64": "huawei-x86", "arm64": "huawei-arm"}
