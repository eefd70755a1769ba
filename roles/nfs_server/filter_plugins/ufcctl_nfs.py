"""Jinja filter exposing ufcctl's NFS planner (checks, exports lines, ganesha files, layout) to the roles.

The logic lives in ufcctl/domain/nfs/, unit-tested without machines; the role only writes what the
plan says.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

try:
    from ufcctl.domain.nfs import plan
except ImportError:  # plain ansible-playbook from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from ufcctl.domain.nfs import plan


def ufcctl_nfs_server_plan(settings: Mapping[str, Any]) -> dict[str, Any]:
    """{'problems': [...], 'exports_line', 'ganesha_server', 'ganesha_exports', 'client_path', 'layout'}."""
    return plan.plan_server(settings).as_dict()


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ufcctl_nfs_server_plan": ufcctl_nfs_server_plan}
