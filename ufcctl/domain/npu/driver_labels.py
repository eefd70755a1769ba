"""The installed NPU driver and firmware as Node labels: what roles/ascend_driver writes at admission and
what `ufcctl upgrade-drivers` reads before it drains (docs/architecture.md decision 18). Pure.

Labels, not an annotation: the drain pool asks the apiserver for the nodes at target with one label
selector (`kubectl get nodes -l ufcctl.io/npu-driver=V,ufcctl.io/npu-firmware=F -o name`), filtered on the
server, so the answer is the names of the nodes at target and nothing else, however big the fleet; an
annotation would need every Node object listed in full. Jobs may select on them too (nodeSelector).

A label value is at most 63 characters of [A-Za-z0-9._-], starting and ending with a letter or digit
(Kubernetes' validation). A version that does not fit gets no labels: the role writes none and the
engine finds no node at target, so every node is drained as before (never the other way round).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ufcctl.domain.npu.driver_plan import module_bool

DRIVER_LABEL = "ufcctl.io/npu-driver"
FIRMWARE_LABEL = "ufcctl.io/npu-firmware"
_VALUE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")


def driver_labels(version: object, firmware_version: object, firmware_enabled: object) -> dict[str, str]:
    """The labels of a node whose driver (and, when enabled, firmware) are these versions; {} when a
    version is missing or is not a valid label value."""
    labels = {DRIVER_LABEL: str(version or "")}
    if module_bool(firmware_enabled):
        labels[FIRMWARE_LABEL] = str(firmware_version or "")
    return labels if all(_VALUE.match(v) for v in labels.values()) else {}


def target_labels(host_vars: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, str]:
    """The labels a node at the rollout's target carries, from the kind's options (--version,
    --firmware-version) over the inventory's vars, resolved as roles/ascend_driver's defaults do; {} when
    the target cannot be known here (a templated value, ascend_driver_force): the node is drained."""
    if module_bool(host_vars.get("ascend_driver_force", False)):
        return {}
    version = options.get("version") or host_vars.get(
        "ascend_driver_version", host_vars.get("ufc_npu_driver_version", ""))
    firmware = options.get("firmware_version") or host_vars.get(
        "ascend_driver_firmware_version", host_vars.get("ufc_npu_firmware_version", ""))
    enabled = host_vars.get("ascend_driver_firmware_enabled", True)
    if any("{" in str(v) for v in (version, firmware, enabled)):
        return {}
    return driver_labels(version, firmware, enabled)


def selector(labels: Mapping[str, str]) -> str:
    """The label selector of these labels (equality on each)."""
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
