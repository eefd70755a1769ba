"""Use cases: plan, run and resume an NPU driver/firmware rollout (playbooks/upgrade-drivers.yml)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ufcctl.domain.inventory.model import NPU_NODE, Host, Inventory
from ufcctl.domain.inventory.patterns import PatternError, select_hosts
from ufcctl.domain.rollout.budget import FailureBudget
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
from ufcctl.domain.rollout.states import DONE, FAILED, PENDING, RUNNING, SKIPPED, run_outcome
from ufcctl.domain.rollout.summary import NodeOutcome, RolloutSummary
from ufcctl.engine.locks import hold_nodes
from ufcctl.engine.runner import RunOptions, new_run_id, run_playbook
from ufcctl.errors import InputError
from ufcctl.paths import playbook
from ufcctl.rollout.drain import drain_guard
from ufcctl.rollout.executor import NodeGuard, RolloutJob, RolloutObserver, RunFn, execute_rollout
from ufcctl.rollout.store import RunRecord, StateStore

KIND = "upgrade-drivers"
PLAYBOOK = "upgrade-drivers.yml"
# The last task of roles/ascend_driver: its ok/changed event means the node is done (see rollout/executor.py).
MARKER_TASK = "Report the node done to the rollout engine"
DEFAULT_NODE_TIMEOUT = 1800  # seconds one installer may run before the node is failed as hung

Loader = Callable[[Path], Inventory]


@dataclass(frozen=True)
class UpgradeRequest:
    inventory_dir: Path
    batch: int
    window: int = 1
    max_fail: float = 0.0
    canary: int = 0
    align: str = "none"
    version: str | None = None  # ascend_driver_version (else the inventory's)
    firmware_version: str | None = None  # ascend_driver_firmware_version (else the inventory's)
    limit: str | None = None  # Ansible pattern inside npu_node
    dry_run: bool = False  # Ansible check mode: report what would change, install nothing
    force: bool = False  # drain nodes even when NPU pods run on them (only with a kubeconfig)
    node_timeout: int = DEFAULT_NODE_TIMEOUT
    forks: int | None = None  # per run; default: the batch size, so a whole batch runs at once
    coalesce_seconds: float = 2.0

    def params(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["inventory_dir"] = str(self.inventory_dir)
        return data

    @classmethod
    def from_params(cls, data: dict[str, Any]) -> UpgradeRequest:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["inventory_dir"] = Path(values["inventory_dir"])
        return cls(**values)


@dataclass(frozen=True)
class PlanReport:
    plan: RolloutPlan
    projection: Projection | None
    targets: int


def _load(loader: Loader | None, path: Path) -> Inventory:
    if loader is None:
        from ufcctl.app.inventory import load_inventory

        loader = load_inventory
    return loader(path)


def _targets(inventory: Inventory, request: UpgradeRequest) -> list[Host]:
    """npu_node hosts, narrowed by --limit when given, in inventory order."""
    npu = inventory.group_hosts(NPU_NODE)
    if not npu:
        raise InputError(f"{request.inventory_dir}: group {NPU_NODE} has no hosts",
                         f"put the NPU workers in {NPU_NODE} (see inventories/sample)")
    names = npu
    if request.limit is not None:
        try:
            limited = set(select_hosts(inventory, request.limit))
        except PatternError as err:
            raise InputError(f"--limit {request.limit!r}: {err}",
                             "use host names, group names, globs, ! and &") from err
        names = [h for h in npu if h in limited]
        if not names:
            raise InputError(f"--limit {request.limit!r} selects no host of group {NPU_NODE}")
    return inventory.subset(names)


def _plan(hosts: Sequence[Host], request: UpgradeRequest) -> RolloutPlan:
    var = ALIGN_VARS.get(request.align)
    nodes = [NodeRef(h.name, None if var is None or h.vars.get(var) is None else str(h.vars[var]))
             for h in hosts]
    try:
        return plan_batches(nodes, batch_size=request.batch, canary=request.canary, align=request.align,
                            window=request.window)
    except PlanError as err:
        raise InputError(f"{request.inventory_dir}: {err}") from err


def plan_upgrade(request: UpgradeRequest, store: StateStore, *, node_seconds: float | None = None,
                 loader: Loader | None = None) -> PlanReport:
    """Batches and projected duration; reads the inventory and the state store, touches nothing."""
    hosts = _targets(_load(loader, request.inventory_dir), request)
    plan = _plan(hosts, request)
    projection = None
    if node_seconds is not None:
        projection = project(plan, node_seconds, "--node-seconds")
    else:
        for record in store.runs(KIND):  # newest first; dry runs install nothing, so they measure nothing
            seconds = None if record.params.get("dry_run") else store.median_node_seconds(record.run_id)
            if seconds is not None:
                projection = project(plan, seconds, f"median node time of run {record.run_id}")
                break
    return PlanReport(plan, projection, len(hosts))


def _options(request: UpgradeRequest) -> RunOptions:
    extravars: dict[str, Any] = {"ascend_driver_install_timeout": request.node_timeout}
    if request.version:
        extravars["ascend_driver_version"] = request.version
    if request.firmware_version:
        extravars["ascend_driver_firmware_version"] = request.firmware_version
    return RunOptions(
        forks=request.forks or request.batch,
        check=request.dry_run,
        extravars=extravars,
        # a safety net only: the role times out a hung installer itself (ascend_driver_install_timeout)
        timeout=2 * request.node_timeout + 900,
    )


def _run(run_id: str, request: UpgradeRequest, inventory: Inventory, plan: RolloutPlan, todo: list[str],
         store: StateStore, run_fn: RunFn | None, observer: RolloutObserver | None,
         guard: NodeGuard | None) -> RolloutSummary:
    run_fn = run_fn or run_playbook  # looked up per call, so tests can replace the engine
    before = store.run(run_id)
    counts = before.counts if before else {}
    job = RolloutJob(
        run_id=run_id, playbook=playbook(PLAYBOOK), plan=plan, hosts=inventory.hosts, todo=tuple(todo),
        options=_options(request), marker_task=MARKER_TASK,
        budget=FailureBudget(request.max_fail, floor=request.batch),
        coalesce_seconds=request.coalesce_seconds,
        done_before=counts.get(DONE, 0), failed_before=counts.get(FAILED, 0),
    )
    started = time.monotonic()
    try:
        stop = execute_rollout(job, store, run_fn, observer=observer, guard=guard)
    except KeyboardInterrupt:
        store.finish_run(run_id, "interrupted", "interrupted by the user")
        raise
    after = store.run(run_id)
    assert after is not None
    store.finish_run(run_id, run_outcome(after.counts, stop), stop)
    return summarize(store, run_id, seconds=time.monotonic() - started)


def upgrade(request: UpgradeRequest, store: StateStore, *, run_fn: RunFn | None = None,
            observer: RolloutObserver | None = None, loader: Loader | None = None,
            retry_failed: bool = False) -> RolloutSummary:
    """A new rollout over npu_node (or, with retry_failed, over the newest run's failed nodes)."""
    inventory = _load(loader, request.inventory_dir)
    hosts = _targets(inventory, request)
    if retry_failed:
        hosts = _previous_failures(store, request, hosts)
    plan = _plan(hosts, request)
    guard, drain_step = drain_guard(force=request.force, dry_run=request.dry_run)
    run_id = new_run_id(KIND)
    rows = [(h, b.index, i) for b in plan.batches for i, h in enumerate(b.hosts)]
    store.verify()
    # held until the rollout ends (or the process dies): an overlapping run is refused at once
    with hold_nodes(run_id, plan.hosts(), directory=store.lock_dir):
        store.create_run(run_id, KIND, str(request.inventory_dir), request.params(), rows)
        store.set_step(run_id, "drain", drain_step)
        return _run(run_id, request, inventory, plan, plan.hosts(), store, run_fn, observer, guard)


def _previous_failures(store: StateStore, request: UpgradeRequest, hosts: list[Host]) -> list[Host]:
    runs = [r for r in store.runs(KIND) if r.inventory == str(request.inventory_dir)]
    if not runs:
        raise InputError(f"--retry-failed: no earlier {KIND} run on {request.inventory_dir}",
                         "run without --retry-failed first")
    failed = {n.host for n in store.nodes(runs[0].run_id, (FAILED, SKIPPED))}
    chosen = [h for h in hosts if h.name in failed]
    if not chosen:
        raise InputError(f"--retry-failed: run {runs[0].run_id} has no failed or skipped node to retry")
    return chosen


def resume(run_id: str, store: StateStore, *, retry_failed: bool = False, run_fn: RunFn | None = None,
           observer: RolloutObserver | None = None, loader: Loader | None = None) -> RolloutSummary:
    """Continue a run after a crash, a Ctrl-C or a budget stop; done nodes are never redone."""
    record = _resumable(store, run_id)
    request = UpgradeRequest.from_params(record.params)
    inventory = _load(loader, request.inventory_dir)
    again = (RUNNING, FAILED, SKIPPED) if retry_failed else (RUNNING,)
    touched = [n.host for n in store.nodes(run_id, (PENDING, *again))]
    store.verify()
    # The lock, not the recorded pid, says whether the run is still being run: a killed process
    # holds no lock (its pid may have been reused since).
    with hold_nodes(run_id, touched, directory=store.lock_dir):
        store.claim_run(run_id)
        store.reset(run_id, again)
        nodes = store.nodes(run_id)
        missing = [n.host for n in nodes if n.state == PENDING and n.host not in inventory.hosts]
        for host in missing:
            store.mark_skipped(run_id, [host], f"no longer in {request.inventory_dir}")
        plan = _stored_plan(record, store)
        todo = [n.host for n in store.nodes(run_id, (PENDING,))]
        guard, drain_step = drain_guard(force=request.force, dry_run=request.dry_run)
        store.set_step(run_id, "drain", drain_step)
        return _run(run_id, request, inventory, plan, todo, store, run_fn, observer, guard)


def _resumable(store: StateStore, run_id: str) -> RunRecord:
    record = store.run(run_id)
    if record is None:
        raise InputError(f"no run {run_id} in {store.path}", "list runs with `ufcctl runs`")
    if record.kind != KIND:
        raise InputError(f"run {run_id} is a {record.kind} run, not {KIND}")
    return record


def _stored_plan(record: RunRecord, store: StateStore) -> RolloutPlan:
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


def summarize(store: StateStore, run_id: str, seconds: float | None = None) -> RolloutSummary:
    record = store.run(run_id)
    if record is None:
        raise InputError(f"no run {run_id} in {store.path}", "list runs with `ufcctl runs`")
    nodes = tuple(
        NodeOutcome(n.host, n.batch, n.state, n.reason, n.changed, n.seconds, n.attempts)
        for n in store.nodes(run_id)
    )
    return RolloutSummary(run_id, record.kind, record.status, nodes, record.message, seconds,
                          record.steps, bool(record.params.get("dry_run")))


def list_runs(store: StateStore, limit: int = 50) -> list[RunRecord]:
    return store.runs(limit=limit)
