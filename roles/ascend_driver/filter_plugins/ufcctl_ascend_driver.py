"""Jinja filters over ufcctl/domain/npu/fabric_plan.py (the NPU fabric's address plan) and
ufcctl/domain/npu/driver_labels.py (the Node labels naming the installed driver and firmware)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ufcctl.domain.npu import driver_labels, fabric_plan


def ufcctl_ascend_driver_fabric_plan(hostvars: Mapping[str, Any], host: str) -> list[dict[str, Any]]:
    """The host's chips: [{chip, address, netmask, gateway, switch, port}]; [] without a fabric plan."""
    try:
        return [c.as_dict() for c in fabric_plan.host_plan(host, hostvars)]
    except fabric_plan.FabricPlanError as exc:
        raise AnsibleFilterError(f"{exc} (`ufcctl inventory check` names the file)") from None


def ufcctl_ascend_driver_labels(version: Any, firmware_version: Any, firmware_enabled: Any) -> dict[str, str]:
    """{label: value} of a node at these versions; {} when one is not a valid label value."""
    return driver_labels.driver_labels(version, firmware_version, firmware_enabled)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ufcctl_ascend_driver_fabric_plan": ufcctl_ascend_driver_fabric_plan,
                "ufcctl_ascend_driver_labels": ufcctl_ascend_driver_labels}
