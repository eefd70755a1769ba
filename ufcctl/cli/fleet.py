"""The fleet flags every rollout command shares, declared once, and the one request built from them.

`upgrade-drivers`, `deploy` (its node phase), `add-nodes`, `plan deploy`, `plan upgrade-drivers` and
`images preheat` take their batch, window, budget, canary, alignment (and, where they have them,
--limit, --order, --join-rate, --forks, --chunk-size, --accelerate) from `fleet_options`, which hands
the command one typed `Fleet`; `rollout_request` turns it, with the command's own settings, into the
`RolloutRequest` the engine runs. Flags a command does not declare keep RolloutRequest's defaults.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ufcctl.cli.numbers import MAX_COUNT, integer, number, percent
from ufcctl.cli.options import accelerate_option
from ufcctl.domain.rollout.order import LONGEST, ORDERS
from ufcctl.domain.rollout.plan import ALIGN_VARS
from ufcctl.report.rollout import RolloutProgress
from ufcctl.rollout.kind import DEFAULT_CHUNK, RolloutRequest
from ufcctl.rollout.kinds.deploy_nodes import DEFAULT_JOIN_RATE

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


@dataclass(frozen=True)
class Fleet:
    """The fleet flags as parsed (names as click passes them); those a command lacks keep these defaults."""

    batch: int
    window: int
    max_fail: float
    canary: int
    align: str
    limit: str | None = None
    order: str = LONGEST
    join_rate: float = 0.0  # 0: no ceiling
    forks: int | None = None
    chunk_size: int = DEFAULT_CHUNK
    accelerate: str | None = None


def _order_option() -> Decorator:
    return click.option("--order", type=click.Choice(list(ORDERS)), default="longest", show_default=True,
                        help="Start order after the canary: longest expected first (node times of earlier "
                             "runs), or the plan's order.")


def _join_rate_option() -> Decorator:
    return click.option("--join-rate", type=number(0, MAX_COUNT), default=DEFAULT_JOIN_RATE,
                        show_default=True, help="Workers started per second at most, so joins do not flood "
                                                "the apiservers (0: no ceiling).")


def _engine_options() -> list[Decorator]:
    return [
        click.option("--forks", type=integer(1, 1000), default=None,
                     help="Parallel hosts per Ansible process (default: WINDOW x BATCH plus a few to start "
                          "next)."),
        click.option("--chunk-size", type=integer(1, 100000), default=DEFAULT_CHUNK, show_default=True,
                     help="Nodes per long-lived Ansible process."),
    ]


def _common_options(batch: int | None, window: int, max_fail: str = "0%") -> list[Decorator]:
    """The flags every fleet command has: batch, window, budget, canary, alignment."""
    batch_help = "Nodes per batch: the unit of planning, alignment, canary and the budget's floor."
    return [
        click.option("--batch", "-b", type=integer(1, 10000), required=batch is None, default=batch,
                     show_default=batch is not None, help=batch_help),
        click.option("--window", "-w", type=integer(1, 100), default=window, show_default=True,
                     help="Batches' worth of nodes in flight at once (window x batch node slots)."),
        click.option("--max-fail", type=percent(), default=max_fail, show_default=True,
                     help="Stop starting nodes once failed nodes exceed this share of processed ones "
                          "(measured against at least one batch)."),
        click.option("--canary", type=integer(0, MAX_COUNT), default=0, show_default=True,
                     help="Nodes run first, alone; any failure among them stops the rollout."),
        click.option("--by", "align", type=click.Choice(list(ALIGN_VARS)), default="none",
                     show_default=True, help="Cut batches along ToR switches or super pods "
                                             "(npu_tor_id / npu_super_pod_id)."),
    ]


def fleet_options(*, group: str, batch: int | None = None, window: int = 1, limit: bool = True,
                  order: bool = False, join_rate: bool = False, engine: bool = False,
                  accelerate: bool = False, max_fail: str = "0%") -> Decorator:
    """The fleet flags (declared once), handed to the command as `fleet: Fleet`: batch, window,
    budget, canary, alignment; --limit inside `group` (limit), --order, --join-rate, --forks and
    --chunk-size (engine), --accelerate when asked for. batch None: --batch is required. max_fail: the
    budget's default (a read-only sweep checks every node: 100%)."""
    options = _common_options(batch, window, max_fail)
    names = {"batch", "window", "max_fail", "canary", "align"}
    limit_option = click.option("--limit", "-l", default=None,
                                help=f"Ansible host pattern inside group {group}.")
    optional: list[tuple[bool, list[Decorator], set[str]]] = [
        (limit, [limit_option], {"limit"}),
        (join_rate, [_join_rate_option()], {"join_rate"}),
        (order, [_order_option()], {"order"}),
        (engine, _engine_options(), {"forks", "chunk_size"}),
        (accelerate, [accelerate_option()], {"accelerate"}),
    ]
    for wanted, more, their_names in optional:
        if wanted:
            options += more
            names |= their_names

    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)  # keeps the options declared below this decorator (__click_params__)
        def command(**kwargs: Any) -> Any:
            # only the flags declared here: a command's own --limit or --forks stays its own
            given = {name: kwargs.pop(name) for name in names}
            return func(fleet=Fleet(**given), **kwargs)

        declared: Callable[..., Any] = command
        for option in reversed(options):
            declared = option(declared)
        return declared

    return apply


def rollout_request(fleet: Fleet, inventory: Path, *, limit: str | None = None, dry_run: bool = False,
                    force: bool = False, options: Mapping[str, Any] | None = None) -> RolloutRequest:
    """The rollout request of a fleet command: its fleet flags, its inventory, and the kind's own
    options (the kind's `*_options`). `limit` is a command's own --limit (deploy, add-nodes)."""
    return RolloutRequest(
        inventory_dir=inventory, batch=fleet.batch, window=fleet.window, max_fail=fleet.max_fail,
        canary=fleet.canary, align=fleet.align, limit=fleet.limit if limit is None else limit,
        dry_run=dry_run, force=force, forks=fleet.forks, accelerate=fleet.accelerate, order=fleet.order,
        chunk_size=fleet.chunk_size, rate=fleet.join_rate or None, options=dict(options or {}),
    )


def progress(output: str) -> Callable[[], RolloutProgress]:
    """The live display of a fleet command, for app/fleet.py to open (quiet under --output json)."""
    return lambda: RolloutProgress(quiet=output == "json")
