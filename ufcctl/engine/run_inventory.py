"""The generated inventory of one Ansible run: only its hosts (and context hosts), their merged vars
and their group memberships, written 0600 into the run's directory.

Ansible never sees the whole inventory (docs/architecture.md, decision 2).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ufcctl.domain.inventory.model import Host
from ufcctl.domain.inventory.values import to_ansible_json
from ufcctl.engine.files import write_file


def render_inventory(hosts: Iterable[Host]) -> dict[str, Any]:
    """A YAML/JSON inventory holding only these hosts, their merged vars and their groups."""
    hostvars: dict[str, Any] = {}
    members: dict[str, dict[str, None]] = {}
    for host in hosts:
        hostvars[host.name] = dict(host.vars)
        for group in host.groups:
            if group not in ("all", "ungrouped"):
                members.setdefault(group, {})[host.name] = None
    children = {g: {"hosts": names} for g, names in sorted(members.items())}
    return {"all": {"hosts": hostvars, "children": children}}


def context_limit(limit: str | None, context: Iterable[str]) -> str | None:
    """The --limit that keeps context hosts out of every play: `all,!cp1,!lb1` (a comma list:
    Ansible evaluates exclusions after the union). A run with context hosts takes no other limit,
    since an arbitrary pattern (`a:&b`) cannot be joined with exclusions safely."""
    excluded = [f"!{name}" for name in context]
    if not excluded:
        return limit
    if limit:
        raise ValueError("a run with context hosts takes no --limit pattern")
    return ",".join(["all", *excluded])


def write_inventory(path: Path, hosts: Iterable[Host]) -> None:
    # JSON is valid YAML, so Ansible's yaml inventory plugin reads it; 0600 because host vars may
    # hold secrets (become passwords, tokens). to_ansible_json keeps `!unsafe`/`!vault` values and YAML
    # dates in a JSON form Ansible reads back.
    write_file(path, json.dumps(to_ansible_json(render_inventory(hosts))), 0o600)
