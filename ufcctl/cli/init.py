"""`ufcctl init NAME`: scaffold ./inventories/NAME from the sample inventory."""

from __future__ import annotations

import os

import click

from ufcctl.app.scaffold import scaffold_inventory


@click.command("init")
@click.argument("name")
def init(name: str) -> None:
    """Create ./inventories/NAME from the documented sample (never overwrites)."""
    target = scaffold_inventory(name)
    shown = os.path.relpath(target)
    click.echo(f"created {shown} from the sample inventory")
    click.echo(f"next: edit {shown}/hosts.yml and {shown}/group_vars/all/*.yml (see {shown}/README.md),")
    click.echo(f"      then `ufcctl inventory check --inventory {name}`")


COMMANDS = [init]
