"""The lab's tables: the nodes `ufcctl lab up` started and the containers `ufcctl lab status` found.

The lab's own types stay in ufcctl/lab (only cli/main.py imports that package): the lab's commands
pass the rows as the small records below.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ufcctl.report.output import print_table


@dataclass(frozen=True)
class LabNode:
    name: str
    role: str
    ip: str
    tor: int | str = ""  # empty for a node without topology
    super_pod: int | str = ""
    rack: str = ""


@dataclass(frozen=True)
class LabContainer:
    name: str
    role: str
    state: str
    ip: str


def print_lab_nodes(lab: str, vip: str, nodes: Sequence[LabNode]) -> None:
    print_table(f"lab {lab} (VIP {vip})", ("name", "role", "ip", "tor", "super pod", "rack"),
                [(n.name, n.role, n.ip, n.tor, n.super_pod, n.rack) for n in nodes])


def print_lab_containers(containers: Sequence[LabContainer]) -> None:
    print_table("", ("name", "role", "state", "ip"), [(c.name, c.role, c.state, c.ip) for c in containers])
