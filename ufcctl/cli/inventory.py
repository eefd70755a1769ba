"""`ufcctl inventory check|show`: validate an inventory directory, or print its groups and topology."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from ufcctl.app.inventory import CheckResult, InventorySummary, check_inventory, summarize
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.domain.inventory.ranges import compact_host_names
from ufcctl.domain.inventory.sources import Problem
from ufcctl.errors import EXIT_BAD_INPUT
from ufcctl.report.output import print_json, print_table, stdout_console

DOMAIN_TITLES = {
    "accelerator_types": ("accelerator type", "npu_accelerator_type"),
    "tors": ("ToR switch", "npu_tor_id"),
    "super_pods": ("super pod", "npu_super_pod_id"),
    "racks": ("rack", "rack"),
    "slices": ("slice", "npu_slice_id"),
}
MAX_ROWS = 20  # per failure-domain table; bigger ones are summarised in one line
MAX_CHILDREN_ROWS = 12  # a group with more children than this shows them in its own row only


@click.group("inventory")
def inventory_group() -> None:
    """Check and inspect an Ansible inventory directory (read like ansible-inventory, without Ansible)."""


def _problem_json(p: Problem) -> dict[str, str]:
    return {**asdict(p), "text": str(p)}


@inventory_group.command("check")
@inventory_option()
@output_option()
@click.pass_context
def check(ctx: click.Context, inventory: Path, output: str) -> None:
    """Validate hosts, groups, vars and cluster rules; exit 2 listing every problem. Contacts no host."""
    result = check_inventory(inventory)
    if output == "json":
        print_json(_check_json(result))
        if not result.valid:
            ctx.exit(EXIT_BAD_INPUT)
        return
    for warning in result.warnings:
        click.echo(f"Warning: {warning}", err=True)
    if not result.valid:
        raise result.error()
    assert result.inventory is not None
    click.echo(
        f"inventory {result.path}: OK — {len(result.inventory.hosts)} hosts, "
        f"{len(result.inventory.groups)} groups"
        + (f", {len(result.warnings)} warning(s)" if result.warnings else "")
    )


def _check_json(result: CheckResult) -> dict[str, object]:
    inv = result.inventory
    return {
        "valid": result.valid,
        "inventory": result.path,
        "hosts": len(inv.hosts) if inv else None,
        "groups": len(inv.groups) if inv else None,
        "problems": [_problem_json(p) for p in result.problems],
        "warnings": [_problem_json(p) for p in result.warnings],
    }


@inventory_group.command("show")
@inventory_option()
@output_option()
def show(inventory: Path, output: str) -> None:
    """Hosts per group and counts per accelerator type, ToR, super pod, rack and slice."""
    result = check_inventory(inventory)
    if not result.valid or result.inventory is None:
        raise result.error()
    summary = summarize(result.inventory)
    if output == "json":
        print_json(_show_json(summary))
        return
    _print_summary(summary)


def _show_json(summary: InventorySummary) -> dict[str, object]:
    topology = summary.topology
    return {
        "inventory": summary.path,
        "hosts": summary.hosts,
        "npu_nodes": topology.npu_nodes,
        "groups": {
            g.name: {"hosts": g.hosts, "members": list(g.members), "children": list(g.children)}
            for g in summary.groups
        },
        "topology": {key: dict(counts) for key, counts in topology.domains.items()},
        "npu_nodes_without": dict(topology.npu_nodes_without),
    }


def _members(members: tuple[str, ...], limit: int = 6) -> str:
    text = ", ".join(members[:limit])
    return text + (f" … (+{len(members) - limit})" if len(members) > limit else "")


def _count(children: tuple[str, ...]) -> str:
    return f" [{len(children)} groups]" if len(children) > MAX_CHILDREN_ROWS else ""


def _natural(item: Sequence[Any]) -> list[Any]:
    # tor-2 before tor-10 (re.split alternates text and digit parts, so ints meet ints)
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(item[0]))]


def _print_summary(summary: InventorySummary) -> None:
    console = stdout_console()
    console.print(
        f"[bold]{summary.path}[/]: {summary.hosts} hosts, {summary.topology.npu_nodes} NPU nodes",
        highlight=False,
    )
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


COMMANDS = [inventory_group]
