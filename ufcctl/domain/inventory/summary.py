"""What `ufcctl inventory show` reports of an inventory: hosts per group and the failure-domain
counts (ufcctl/app/inventory.py `summarize` fills it; ufcctl/report/inventory.py prints it)."""

from __future__ import annotations

from dataclasses import dataclass

from ufcctl.domain.inventory.topology import Topology


@dataclass(frozen=True)
class GroupSummary:
    name: str
    hosts: int  # descendants included
    members: tuple[str, ...]  # direct hosts in range notation
    children: tuple[str, ...]


@dataclass(frozen=True)
class InventorySummary:
    path: str
    hosts: int
    groups: tuple[GroupSummary, ...]  # in inventory order, `all` and empty `ungrouped` left out
    topology: Topology
