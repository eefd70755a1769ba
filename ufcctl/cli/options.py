"""Options shared by several commands, declared once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ufcctl.cli.numbers import integer
from ufcctl.paths import resolve_inventory


def _inventory(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    return None if value is None else resolve_inventory(value)


def inventory_option(required: bool = True) -> Callable[[Any], Any]:
    return click.option(
        "--inventory",
        "-i",
        "inventory",
        required=required,
        callback=_inventory,
        metavar="NAME|PATH",
        help="inventories/NAME, or a path to an inventory directory.",
    )


def output_option() -> Callable[[Any], Any]:
    return click.option(
        "--output", "-o", type=click.Choice(["text", "json"]), default="text", show_default=True,
        help="Output format.",
    )


def forks_option() -> Callable[[Any], Any]:
    return click.option(
        "--forks", type=integer(1, 1000), default=50, show_default=True,
        help="Parallel hosts per Ansible run (about 100 MB of controller memory each).",
    )


def accelerate_option() -> Callable[[Any], Any]:
    return click.option(
        "--accelerate", type=click.Choice(["mitogen"]), default=None,
        help="Opt-in Mitogen strategy; used only when Mitogen supports the installed ansible-core.",
    )
