"""Inventory values that become a directory name on the controller (pki/<cluster>/, manifests/<inventory>/).

Such a value must be one plain name: a `/` or `..` would write CA keys outside the state directory,
and a name past the file system's 255-byte limit would fail with an OSError halfway through a run.
"""

from __future__ import annotations

import re
from typing import Any

from ufcctl.domain.inventory.connection import is_template
from ufcctl.domain.inventory.model import Inventory
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.inventory.values import VaultedValue

MAX_NAME = 63  # an RFC 1123 label; far below any file system's 255-byte name limit
# the cluster name: an RFC 1123 label (it also names Kubernetes objects and certificates)
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# the inventory name: what `ufcctl init NAME` accepts (a directory name, not hidden, no separator)
_DIR_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

# variable -> (rule, what to write)
PATH_NAME_VARS: dict[str, tuple[re.Pattern[str], str]] = {
    "ufc_cluster_name": (_LABEL, "lower-case letters, digits and '-', e.g. prod-a"),
    "ufc_inventory_name": (_DIR_NAME, "letters, digits, '.', '_' and '-', e.g. prod"),
    "k8s_manifests_inventory_name": (_DIR_NAME, "letters, digits, '.', '_' and '-', e.g. prod"),
}


def name_problem(value: Any, rule: re.Pattern[str] = _DIR_NAME) -> str | None:
    """Why `value` cannot be one directory name on the controller (None: it can)."""
    if not isinstance(value, str) or not value:
        return "is empty" if value in (None, "") else f"is {type(value).__name__}, not a name"
    if len(value) > MAX_NAME:
        return f"is {len(value)} characters long (at most {MAX_NAME})"
    if not rule.match(value):
        return f"{value!r} is not a plain name (it names a directory on the controller)"
    return None


def check_path_names(inv: Inventory, problems: list[Problem], warnings: list[Problem]) -> None:
    """ufc_cluster_name and the inventory-name overrides of every host that sets them."""
    verdicts: dict[tuple[str, str], str | None] = {}  # 16,000 hosts share one cluster name
    for name, host in inv.hosts.items():
        for var, (rule, fix) in PATH_NAME_VARS.items():
            if var not in host.vars:
                continue
            value = host.vars[var]
            if isinstance(value, VaultedValue) or is_template(value):
                continue  # rendered by Ansible; the roles' paths are checked there
            key = (var, repr(value)[:200])
            if key not in verdicts:
                verdicts[key] = name_problem(value, rule)
            if verdicts[key] is not None:
                problems.append(Problem(inv.var_origin(name, var), f"host {name}", f"{var} {verdicts[key]}",
                                        f"use {fix}; at most {MAX_NAME} characters"))
