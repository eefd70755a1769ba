"""Use cases every kind of rollout shares: start, resume, --retry-failed, summaries, the run list.

A kind (kind.py) says what a node's work is; this module does the rest the same way for all of
them, on the targets and batch plan of `planning.py`: the start order (longest expected first, from
durations stored by earlier runs), the failure budget, the node lock, the run store, and resuming a
stored run by the kind it names. The caller loads the inventory (`start`) or says how (`resume`'s
loader), so this package never imports the app layer.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ufcctl.domain.inventory.model import Host, Inventory
from ufcctl.domain.rollout.budget import FailureBudget
from ufcctl.domain.rollout.order import start_order
from ufcctl.domain.rollout.plan import RolloutPlan
from ufcctl.domain.rollout.states import DONE, FAILED, PENDING, RUNNING, SKIPPED, run_outcome
from ufcctl.domain.rollout.summary import NodeOutcome, RolloutSummary
from ufcctl.engine.inventory_files import fingerprint
from ufcctl.engine.locks import holding
from ufcctl.engine.runner import RunOptions, mitogen_env, new_run_id, run_playbook
from ufcctl.errors import InputError, Stopped, shown
from ufcctl.paths import playbook
from ufcctl.rollout.executor import execute_rollout
from ufcctl.rollout.job import RolloutJob, RolloutObserver, RunFn, chunk_forks
from ufcctl.rollout.kind import KindRegistry, NodeGuard, RolloutKind, RolloutRequest
from ufcctl.rollout.planning import plan_for, stored_plan, targets
from ufcctl.rollout.store import RunRecord, StateStore
from ufcctl.rollout.storefile import corrupt

# How `resume` reads the inventory a run recorded (ufcctl.app.inventory.load_inventory; tests pass
# their own): the caller's, so this package never imports the app layer.
Loader = Callable[[Path], Inventory]
# A rollout play's strategy is `{{ ufc_rollout_strategy | default('host_pinned') }}`
# (playbooks/upgrade-drivers.yml): with --accelerate mitogen it is Mitogen's host_pinned, whose
# plugin directory the runner adds.
STRATEGY_VAR = "ufc_rollout_strategy"
FORCE_VAR = "ufc_rollout_force"  # the run has --force (a play that drains evicts NPU pods too)
MITOGEN_STRATEGY = "mitogen_host_pinned"


def _check_accelerate(request: RolloutRequest) -> None:
    """Refused before anything is written, not in every Ansible process later."""
    if request.accelerate is None:
        return
    if request.accelerate != "mitogen":
        raise InputError(f"--accelerate {request.accelerate!r}: unknown accelerator", "use: mitogen")
    mitogen_env()  # EnvironmentMissing when Mitogen is absent or does not support this ansible-core


def context_hosts(kind: RolloutKind, inventory: Inventory) -> tuple[Host, ...]:
    """The hosts of the kind's context groups, inventory order, each once."""
    names = dict.fromkeys(h for g in kind.context_groups for h in inventory.group_hosts(g))
    return tuple(inventory.hosts[h] for h in names)


def _options(kind: RolloutKind, request: RolloutRequest, capacity: int, inventory: Inventory) -> RunOptions:
    extravars: dict[str, Any] = dict(kind.extravars(request.options))
    if kind.inventory_extravars is not None:
        extravars.update(kind.inventory_extravars(inventory))
    if request.accelerate == "mitogen":
        extravars[STRATEGY_VAR] = MITOGEN_STRATEGY
    if request.force:  # a drain in the play evicts NPU pods too (roles/ascend_driver drain_install.yml)
        extravars[FORCE_VAR] = True
    return RunOptions(
        forks=request.forks or chunk_forks(capacity),
        check=request.dry_run,
        extravars=extravars,
        accelerate=request.accelerate,
        context=context_hosts(kind, inventory),
        # no whole-run timeout: a process serves its chunk for as long as its nodes take; a hung
        # node is failed by the engine's per-node deadline (kind.node_deadline)
        timeout=None,
    )


def _execute(kind: RolloutKind, run_id: str, request: RolloutRequest, inventory: Inventory,
             rollout_plan: RolloutPlan, todo: list[str], store: StateStore, run_fn: RunFn | None,
             observer: RolloutObserver | None, hooks: tuple[NodeGuard | None, str]) -> RolloutSummary:
    run_fn = run_fn or run_playbook  # looked up per call, so tests can replace the engine
    guard, drain_step = hooks
    store.set_step(run_id, "drain", drain_step)
    before = store.run(run_id)
    counts = before.counts if before else {}
    known, floors = store.node_durations(kind.name) if request.order != "plan" else ({}, {})
    job = RolloutJob(
        run_id=run_id, playbook=playbook(kind.playbook), plan=rollout_plan, hosts=inventory.hosts,
        order=tuple(start_order(rollout_plan, todo, known, request.order, floors)),
        options=_options(kind, request, rollout_plan.capacity, inventory), marker_task=kind.marker_task,
        budget=FailureBudget(request.max_fail, floor=request.batch), chunk_size=request.chunk_size,
        node_deadline=kind.node_deadline(request.options), rate=request.rate,
        done_before=counts.get(DONE, 0), failed_before=counts.get(FAILED, 0),
    )
    started = time.monotonic()
    try:
        stop = execute_rollout(job, store, run_fn, observer=observer, guard=guard)
    except KeyboardInterrupt as err:  # Stopped (a signal) included: its processes have ended by now
        store.finish_run(run_id, "interrupted", _interrupted(err))
        raise
    after = store.run(run_id)
    assert after is not None
    store.finish_run(run_id, run_outcome(after.counts, stop), stop)
    return summarize(store, run_id, seconds=time.monotonic() - started)


def start(kind: RolloutKind, request: RolloutRequest, store: StateStore, inventory: Inventory, *,
          run_fn: RunFn | None = None, observer: RolloutObserver | None = None,
          retry_failed: bool = False, inventory_fingerprint: str | None = None) -> RolloutSummary:
    """A new rollout of `kind` over `inventory` (loaded by the caller from request.inventory_dir), or,
    with retry_failed, over the newest run's failed and skipped nodes. `inventory_fingerprint` is the
    hash of the files the caller read (app/fleet.py takes it at the read); without it, taken now."""
    # absolute: `ufcctl resume` from another directory reads the same inventory
    request = dataclasses.replace(request, inventory_dir=_absolute(request.inventory_dir))
    inventory_hash = inventory_fingerprint or fingerprint(request.inventory_dir)
    hosts = targets(kind, inventory, request)
    if retry_failed:
        hosts = _previous_failures(kind, store, request, hosts)
    rollout_plan = plan_for(hosts, request)
    _check_accelerate(request)
    hooks = kind.hooks(request)  # before anything is written: kubectl missing is refused here
    run_id = new_run_id(kind.name)
    rows = [(h, b.index, i) for b in rollout_plan.batches for i, h in enumerate(b.hosts)]
    store.verify()
    # held until the rollout ends (or the process dies): an overlapping run is refused at once
    with holding(run_id, rollout_plan.hosts(), directory=store.lock_dir):
        store.create_run(run_id, kind.name, str(request.inventory_dir), request.params(), rows,
                         inventory_fingerprint=inventory_hash)
        _prepare_run(kind, run_id, request, inventory, store)
        return _execute(kind, run_id, request, inventory, rollout_plan, rollout_plan.hosts(), store, run_fn,
                        observer, hooks)


def _prepare_run(kind: RolloutKind, run_id: str, request: RolloutRequest, inventory: Inventory,
                 store: StateStore) -> None:
    """The kind's once-per-run step (a join token...); a failure ends the run before any node starts."""
    if kind.prepare is None:
        return
    try:
        line = kind.prepare(request, inventory)
    except KeyboardInterrupt as err:  # e.g. SIGTERM during the preparation's own Ansible run
        store.finish_run(run_id, "interrupted", f"before any node: {_interrupted(err)}")
        if isinstance(err, Stopped):
            err.what = (f"rollout {run_id} stopped before any node, its Ansible processes ended; "
                        f"`ufcctl resume {run_id}` continues")
        raise
    except Exception as err:
        message = getattr(err, "message", None) or str(err)
        store.finish_run(run_id, "failed", f"before any node: {message}")
        raise
    store.set_step(run_id, "prepare", line)


def _interrupted(err: KeyboardInterrupt) -> str:
    return f"stopped by {err.signal_name}" if isinstance(err, Stopped) else "interrupted by the user"


def _previous_failures(kind: RolloutKind, store: StateStore, request: RolloutRequest,
                       hosts: list[Host]) -> list[Host]:
    # runs recorded before paths were stored absolute: taken against this working directory
    runs = [r for r in store.runs(kind.name) if _absolute(Path(r.inventory)) == request.inventory_dir]
    if not runs:
        raise InputError(f"--retry-failed: no earlier {kind.name} run on {request.inventory_dir}",
                         "run without --retry-failed first")
    failed = {n.host for n in store.nodes(runs[0].run_id, (FAILED, SKIPPED))}
    chosen = [h for h in hosts if h.name in failed]
    if not chosen:
        raise InputError(f"--retry-failed: run {runs[0].run_id} has no failed or skipped node to retry")
    return chosen


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(path))


def _inventory_check(record: RunRecord, inventory_dir: Path, accept_change: bool) -> str | None:
    """The inventory's fingerprint now, to record; InputError when it changed since the run began.

    Refused, not warned: the stored plan is kept (new hosts are not in it, removed ones get skipped),
    but every host var may have changed too (versions, addresses, the cluster a node joins), and a
    warning scrolls past while a half-done rollout on 16,000 nodes goes on with it. Whoever has looked
    at the change says so with --accept-inventory-change.
    """
    now = fingerprint(inventory_dir)
    if record.inventory_fingerprint is None or record.inventory_fingerprint == now or accept_change:
        return now
    raise InputError(
        f"run {record.run_id}: inventory {inventory_dir} changed since the run began",
        "check the change (the run keeps its node list: new hosts are not in it, removed ones are "
        f"skipped), then `ufcctl resume {record.run_id} --accept-inventory-change`; or start a new run")


def resume(run_id: str, store: StateStore, *, kinds: KindRegistry, loader: Loader, retry_failed: bool = False,
           run_fn: RunFn | None = None, observer: RolloutObserver | None = None,
           accept_inventory_change: bool = False) -> RolloutSummary:
    """Continue a run of any kind after a crash, a Ctrl-C or a budget stop; done nodes are never redone.

    The run's kind is found by name in `kinds` (the commands pass `catalog.KINDS`); `loader` reads the
    inventory the run recorded. Refused when the inventory's files changed since the run began,
    unless accept_inventory_change.
    """
    record = _record(store, run_id)
    kind = kinds.get(record.kind)
    if kind is None:
        raise InputError(f"run {run_id} is a {record.kind!r} rollout, a kind this ufcctl does not know",
                         "resume it with the ufcctl that started it; known kinds: "
                         f"{', '.join(kinds.names())}")
    try:
        request = RolloutRequest.from_params(record.params, kind)
    except ValueError as err:  # a hand-edited row: reported as the file's damage, exit 2
        raise corrupt(store.path, f"row of run {shown(run_id)}: {err}") from err
    request = dataclasses.replace(request, inventory_dir=_absolute(request.inventory_dir))
    inventory_hash = _inventory_check(record, request.inventory_dir, accept_inventory_change)
    inventory = loader(request.inventory_dir)
    _check_accelerate(request)
    hooks = kind.hooks(request)
    again = (RUNNING, FAILED, SKIPPED) if retry_failed else (RUNNING,)
    touched = [n.host for n in store.nodes(run_id, (PENDING, *again))]
    store.verify()
    # The lock, not the recorded pid, says whether the run is still being run: a killed process
    # holds no lock (its pid may have been reused since).
    with holding(run_id, touched, directory=store.lock_dir):
        store.claim_run(run_id, inventory_fingerprint=inventory_hash)
        store.reset(run_id, again)
        nodes = store.nodes(run_id)
        missing = [n.host for n in nodes if n.state == PENDING and n.host not in inventory.hosts]
        for host in missing:
            store.mark_skipped(run_id, [host], f"no longer in {request.inventory_dir}")
        rollout_plan = stored_plan(record, store)
        todo = [n.host for n in store.nodes(run_id, (PENDING,))]
        if todo:
            _prepare_run(kind, run_id, request, inventory, store)
        return _execute(kind, run_id, request, inventory, rollout_plan, todo, store, run_fn, observer, hooks)


def _record(store: StateStore, run_id: str) -> RunRecord:
    record = store.run(run_id)
    if record is None:
        raise InputError(f"no run {run_id} in {store.path}", "list runs with `ufcctl runs`")
    return record


def summarize(store: StateStore, run_id: str, seconds: float | None = None) -> RolloutSummary:
    record = _record(store, run_id)
    nodes = tuple(
        NodeOutcome(n.host, n.batch, n.state, n.reason, n.changed, n.seconds, n.attempts)
        for n in store.nodes(run_id)
    )
    return RolloutSummary(run_id, record.kind, record.status, nodes, record.message, seconds,
                          record.steps, bool(record.params.get("dry_run")))


def list_runs(store: StateStore, limit: int = 50) -> list[RunRecord]:
    return store.runs(limit=limit)
