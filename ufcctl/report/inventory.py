"""`ufcctl inventory show` for people: hosts per group, then hosts per failure domain (accelerator
type, ToR, super pod, rack, slice), large families folded into one row or line."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ufcctl.domain.inventory.ranges import compact_host_names
from ufcctl.domain.inventory.summary import InventorySummary
from ufcctl.report.output import print_table, stdout_console
from ufcctl.report.terminal import styled

DOMAIN_TITLES = {
    "accelerator_types": ("accelerator type", "npu_accelerator_type"),
    "tors": ("ToR switch", "npu_tor_id"),
    "super_pods": ("super pod", "npu_super_pod_id"),
    "racks": ("rack", "rack"),
    "slices": ("slice", "npu_slice_id"),
}
MAX_ROWS = 20  # per failure-domain table; bigger ones are summarised in one line
MAX_CHILDREN_ROWS = 12  # a group with more children than this shows them in its own row only


def _members(members: tuple[str, ...], limit: int = 6) -> str:
    text = ", ".join(members[:limit])
    return text + (f" … (+{len(members) - limit})" if len(members) > limit else "")


def _count(children: tuple[str, ...]) -> str:
    return f" [{len(children)} groups]" if len(children) > MAX_CHILDREN_ROWS else ""


def _natural(item: Sequence[Any]) -> list[Any]:
    # tor-2 before tor-10 (re.split alternates text and digit parts, so ints meet ints)
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(item[0]))]


def print_inventory_summary(summary: InventorySummary) -> None:
    console = stdout_console()
    console.print(styled((str(summary.path), "bold"),
                         f": {summary.hosts} hosts, {summary.topology.npu_nodes} NPU nodes"))
    # Families of many similar groups (1,000 ToR groups under npu_tors) show as their parent's row.
    crowded = {g.name: g.children for g in summary.groups if len(g.children) > MAX_CHILDREN_ROWS}
    parents: dict[str, list[str]] = {}
    for g in summary.groups:
        for child in g.children:
            parents.setdefault(child, []).append(g.name)
    folded = {name for name, ps in parents.items() if any(p in crowded for p in ps)}
    print_table(
        "Groups",
        ("group", "hosts", "direct members", "children"),
        [
            (
                g.name,
                g.hosts,
                _members(g.members),
                _members(tuple(compact_host_names(g.children))) + _count(g.children),
            )
            for g in summary.groups
            if g.name not in folded
        ],
    )
    if folded:
        console.print(f"{len(folded)} groups shown only as children above; `--output json` lists every group")
    for key, counts in summary.topology.domains.items():
        title, var = DOMAIN_TITLES[key]
        missing = summary.topology.npu_nodes_without[key]
        note = f"; {missing} NPU nodes without {var}" if missing else ""
        if not counts:
            console.print(f"{title} ({var}): none set{note}", highlight=False)
        elif len(counts) > MAX_ROWS:
            sizes = sorted(counts.values())
            console.print(
                f"{title} ({var}): {len(counts)} distinct, hosts each: min {sizes[0]}, max {sizes[-1]}{note}",
                highlight=False,
            )
        else:
            print_table(var, (title, "hosts"), sorted(counts.items(), key=_natural))
            if missing:
                console.print(f"  {missing} NPU nodes without {var}", highlight=False)
