"""Use case: the one front door of every fleet command (pip's `RequirementCommand`, for rollouts).

A fleet command (`upgrade-drivers`, `deploy`'s node phase, `add-nodes`, `images preheat`,
`npu check`, `remove-nodes`, `upgrade-cluster`'s workers, their `plan` and `resume`) needs the same
frame: the inventory loaded once and its fingerprint taken when it was read, the version guard when
the kind asks for it (`RolloutKind.version_guard`), the state store open, a live display, then the
fleet engine (`rollout/runs.py`, `rollout/planning.py`). The commands build it here, with one call.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ufcctl.app.inventory import load_inventory
from ufcctl.app.upgrade_plan import refuse_version_change
from ufcctl.domain.inventory.model import Inventory
from ufcctl.domain.rollout.summary import RolloutSummary
from ufcctl.engine.inventory_files import fingerprint
from ufcctl.errors import InputError, shown
from ufcctl.rollout import planning, runs
from ufcctl.rollout.catalog import KINDS
from ufcctl.rollout.job import RolloutObserver
from ufcctl.rollout.kind import RolloutKind, RolloutRequest
from ufcctl.rollout.store import RunRecord, StateStore

Progress = Callable[[], AbstractContextManager[RolloutObserver | None]]
T = TypeVar("T")


@dataclass(frozen=True)
class LoadedInventory:
    """An inventory as a run records it: loaded once, fingerprinted when it was read."""

    inventory: Inventory
    fingerprint: str
    guarded: bool = False  # the version guard passed on it already (deploy's, before its cluster phase)


def load(inventory_dir: Path, *, guarded: bool = False) -> LoadedInventory:
    """The inventory a new run works on, read from the absolute path the run records (`ufcctl resume`
    reads that path again), with the fingerprint of the files just read."""
    path = Path(os.path.abspath(inventory_dir))
    inventory = load_inventory(path)
    return LoadedInventory(inventory, fingerprint(path), guarded)


def loaded(inventory_dir: Path, inventory: Inventory, *, guarded: bool = False) -> LoadedInventory:
    """An inventory a use case loaded itself (deploy, upgrade-cluster), fingerprinted now."""
    return LoadedInventory(inventory, fingerprint(Path(os.path.abspath(inventory_dir))), guarded)


@contextmanager
def _store(store: StateStore | None) -> Iterator[StateStore]:
    if store is not None:  # the caller's, already open (deploy keeps one across its phases)
        yield store
        return
    with StateStore() as opened:
        yield opened


def start(kind: RolloutKind, request: RolloutRequest, *, progress: Progress = nullcontext,
          retry_failed: bool = False, inventory: LoadedInventory | None = None,
          check: Callable[[Inventory], None] | None = None,
          store: StateStore | None = None) -> RolloutSummary:
    """A new rollout of `kind`: the inventory loaded once (unless given), `check` and the version guard
    (when the kind asks for it) before the state store opens, then the run under a live display."""
    given = inventory if inventory is not None else load(request.inventory_dir)
    if check is not None:
        check(given.inventory)  # exit 2 before the state store is opened
    if kind.version_guard and not given.guarded:
        # a new node's kubelet must not be newer than the apiservers
        refuse_version_change(request.inventory_dir, given.inventory)
    with _store(store) as opened, progress() as observer:
        return runs.start(kind, request, opened, given.inventory, observer=observer,
                          retry_failed=retry_failed, inventory_fingerprint=given.fingerprint)


def plan(kind: RolloutKind, request: RolloutRequest, *,
         node_seconds: float | None = None) -> planning.PlanReport:
    """Batches and projected duration of a run `start` would begin; touches nothing."""
    return with_inventory(request, lambda store, inventory: planning.plan(
        kind, request, store, inventory, node_seconds=node_seconds))


def with_inventory(request: RolloutRequest, read: Callable[[StateStore, Inventory], T]) -> T:
    """`read` (a plan, a dry run) on the state store and the request's inventory, loaded as given."""
    with StateStore() as store:
        return read(store, load_inventory(request.inventory_dir))


def resume(run_id: str, *, progress: Progress = nullcontext, retry_failed: bool = False,
           accept_inventory_change: bool = False) -> RolloutSummary:
    """Continue RUN_ID, of any kind this ufcctl ships, where it stopped."""
    with StateStore() as store, progress() as observer:
        return runs.resume(run_id, store, kinds=KINDS, loader=_recorded_inventory, retry_failed=retry_failed,
                           observer=observer, accept_inventory_change=accept_inventory_change)


def _recorded_inventory(path: Path) -> Inventory:
    """The inventory a stored run names: moved or deleted since (or a path edited into state.db) is
    bad input naming it, not an OSError."""
    if not path.is_dir():
        raise InputError(f"the run's inventory {shown(str(path))} is no directory (any more)",
                         "put the inventory back where the run began, or start a new run")
    return load_inventory(path)


def list_runs(limit: int) -> list[RunRecord]:
    """The newest `limit` runs, newest first."""
    with StateStore() as store:
        return runs.list_runs(store, limit)
