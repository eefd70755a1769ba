"""Jinja filter exposing ufcctl's NFS planner (checks, exports lines, ganesha files, layout) to the roles.

The logic lives in ufcctl/domain/nfs/, unit-tested without machines; the role only writes what the
plan says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ufcctl.domain.nfs import plan


def ufcctl_nfs_server_plan(settings: Mapping[str, Any]) -> dict[str, Any]:
    """{'problems': [...], 'exports_line', 'ganesha_server', 'ganesha_exports', 'client_path', 'layout'}."""
    return plan.plan_server(settings).as_dict()


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ufcctl_nfs_server_plan": ufcctl_nfs_server_plan}
