"""`ufcctl inventory check|show`: validate an inventory directory, or print its groups and topology."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from ufcctl.app.inventory import CheckResult, check_inventory, summarize
from ufcctl.cli.options import inventory_option, output_option
from ufcctl.domain.inventory.sources import Problem
from ufcctl.domain.inventory.summary import InventorySummary
from ufcctl.errors import EXIT_BAD_INPUT
from ufcctl.report.inventory import print_inventory_summary
from ufcctl.report.output import print_json


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
    result = check_inventory(inventory, deploy=True)  # the check before a deploy: its rules too
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
    print_inventory_summary(summary)


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


COMMANDS = [inventory_group]
