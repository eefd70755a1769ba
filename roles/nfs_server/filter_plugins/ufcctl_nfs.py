"""Jinja filter exposing ufcctl's NFS planner (checks, exports lines, ganesha files, layout) to the roles.

The logic lives in ufcctl/domain/nfs/, unit-tested without machines; the role only writes what the
plan says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ufcctl.domain.nfs import backup_store, plan


def ufcctl_nfs_server_plan(settings: Mapping[str, Any]) -> dict[str, Any]:
    """{'problems': [...], 'exports_line', 'ganesha_server', 'ganesha_exports', 'client_path', 'layout'}."""
    return plan.plan_server(settings).as_dict()


def ufcctl_nfs_backup_clients(groups: Mapping[str, Any], hostvars: Mapping[str, Any]) -> list[str]:
    """The etcd snapshot store's clients: every etcd member's address (ufcctl/domain/nfs/backup_store.py)."""
    return backup_store.clients(groups, hostvars)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ufcctl_nfs_server_plan": ufcctl_nfs_server_plan,
                "ufcctl_nfs_backup_clients": ufcctl_nfs_backup_clients}
