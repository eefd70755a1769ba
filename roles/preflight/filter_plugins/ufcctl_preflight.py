"""Jinja filters exposing ufcctl's preflight decisions to the role (logic in ufcctl/domain/)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ufcctl.domain.inventory.arch import ARCH_VAR, OVERRIDES, host_mismatch


def ufcctl_arch_mismatch(values: Mapping[str, Any], host: str, machine: str) -> str:
    """One line naming the host and each architecture variable that is not the host's (`uname -m`),
    '' when they agree; `values` is the host's hostvars (inventory variables, not role defaults)."""
    names = (ARCH_VAR, *OVERRIDES)
    return host_mismatch(str(host), str(machine), {name: values[name] for name in names if name in values})


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ufcctl_arch_mismatch": ufcctl_arch_mismatch}
