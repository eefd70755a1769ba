"""What a rollout of any kind would run: its targets, its batch plan and projected duration.

Reads an inventory already loaded and the run store; touches nothing. `runs.py` starts and resumes
runs from these plans; a kind may use `targets` for its own once-per-run step (preheat-images'
caches serve the targets).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ufcctl.domain.inventory.model import Host, Inventory
from ufcctl.domain.inventory.patterns import PatternError, select_hosts
from ufcctl.domain.rollout.order import ORDERS
from ufcctl.domain.rollout.plan import (
    ALIGN_VARS,
    Batch,
    NodeRef,
    PlanError,
    Projection,
    RolloutPlan,
    plan_batches,
    project,
)
from ufcctl.errors import InputError, shown
from ufcctl.rollout.kind import RolloutKind, RolloutRequest
from ufcctl.rollout.store import RunRecord, StateStore


@dataclass(frozen=True)
class PlanReport:
    plan: RolloutPlan
    projection: Projection | None
    targets: int
    measured: int = 0  # targets with a duration recorded by an earlier run (the start order uses them)


def targets(kind: RolloutKind, inventory: Inventory, request: RolloutRequest) -> list[Host]:
    """The kind's group, narrowed by --limit when given, in inventory order."""
    excluded = {h for g in kind.exclude_groups for h in inventory.group_hosts(g)}
    members = [h for h in inventory.group_hosts(kind.group) if h not in excluded]
    if not members:
        raise InputError(f"{request.inventory_dir}: group {kind.group} has no hosts",
                         f"put the nodes for {kind.name} in group {kind.group} (see inventories/sample)")
    names = members
    if request.limit is not None:
        try:
            limited = set(select_hosts(inventory, request.limit))
        except PatternError as err:
            raise InputError(f"--limit {shown(request.limit)}: {err}",
                             "use host names, group names, globs, ! and &") from err
        names = [h for h in members if h in limited]
        if not names:
            raise InputError(f"--limit {shown(request.limit)} selects no host of group {kind.group}")
    return inventory.subset(names)


def plan_for(hosts: Sequence[Host], request: RolloutRequest) -> RolloutPlan:
    """The batches of `hosts` under the request's batch, canary, alignment and window."""
    if request.order not in ORDERS:
        raise InputError(f"--order {request.order!r}: unknown order", f"use one of: {', '.join(ORDERS)}")
    if request.chunk_size < 1:
        raise InputError(f"chunk size {request.chunk_size} must be at least 1")
    var = ALIGN_VARS.get(request.align)
    nodes = [NodeRef(h.name, None if var is None or h.vars.get(var) is None else str(h.vars[var]))
             for h in hosts]
    try:
        return plan_batches(nodes, batch_size=request.batch, canary=request.canary, align=request.align,
                            window=request.window)
    except PlanError as err:
        raise InputError(f"{request.inventory_dir}: {err}") from err


def plan(kind: RolloutKind, request: RolloutRequest, store: StateStore, inventory: Inventory, *,
         node_seconds: float | None = None) -> PlanReport:
    """Batches and projected duration; reads the inventory and the state store, touches nothing."""
    hosts = targets(kind, inventory, request)
    rollout_plan = plan_for(hosts, request)
    projection = None
    if node_seconds is not None:
        projection = project(rollout_plan, node_seconds, "--node-seconds")
    else:
        # newest first; dry runs install nothing, so they measure nothing
        for record in store.runs(kind.name):
            seconds = None if record.params.get("dry_run") else store.median_node_seconds(record.run_id)
            if seconds is not None:
                projection = project(rollout_plan, seconds, f"median node time of run {record.run_id}")
                break
    known, _ = store.node_durations(kind.name)
    measured = sum(1 for h in hosts if h.name in known)
    return PlanReport(rollout_plan, projection, len(hosts), measured)


def stored_plan(record: RunRecord, store: StateStore) -> RolloutPlan:
    """The plan exactly as the run recorded it (the inventory may have changed since)."""
    batches: dict[int, list[str]] = {}
    for node in store.nodes(record.run_id):
        batches.setdefault(node.batch, []).append(node.host)
    canary = int(record.params.get("canary", 0))
    return RolloutPlan(
        tuple(Batch(i, tuple(hosts), canary=bool(canary) and i == 0) for i, hosts in sorted(batches.items())),
        batch_size=int(record.params["batch"]), window=int(record.params.get("window", 1)),
        canary=canary, align=str(record.params.get("align", "none")),
    )
