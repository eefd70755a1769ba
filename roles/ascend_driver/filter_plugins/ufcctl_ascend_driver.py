"""Jinja filters over ufcctl/domain/npu/fabric_plan.py (the NPU fabric's address plan)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ufcctl.domain.npu import fabric_plan


def ufcctl_ascend_driver_fabric_plan(hostvars: Mapping[str, Any], host: str) -> list[dict[str, Any]]:
    """The host's chips: [{chip, address, netmask, gateway, switch, port}]; [] without a fabric plan."""
    try:
        return [c.as_dict() for c in fabric_plan.host_plan(host, hostvars)]
    except fabric_plan.FabricPlanError as exc:
        raise AnsibleFilterError(f"{exc} (`ufcctl inventory check` names the file)") from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ufcctl_ascend_driver_fabric_plan": ufcctl_ascend_driver_fabric_plan}
