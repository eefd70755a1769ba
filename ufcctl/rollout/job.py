"""What the executor is given: a rollout job (plan, start order, options, budget), the observer of
its progress, the engine's run function; and the small pieces every part of the executor shares."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ufcctl.domain.inventory.model import Host
from ufcctl.domain.rollout.budget import FailureBudget
from ufcctl.domain.rollout.plan import RolloutPlan
from ufcctl.engine.runner import RunOptions, RunResult
from ufcctl.rollout.kind import DEFAULT_CHUNK

log = logging.getLogger(__name__)

RunFn = Callable[..., RunResult]  # engine.runner.run_playbook's signature

# Threads preparing (draining) nodes, and nodes prepared beyond the free slots. kubectl drain
# mostly waits for pods to leave, so 8 in parallel keep up with a window of hundreds of nodes
# whose upgrades take minutes, and 8 extra cordoned nodes are a small price for never waiting on a drain.
PREPARE_WORKERS = 8
PREPARE_AHEAD = 8
# A chunk whose every node has ended but whose process still runs after this long holds only
# hosts failed as hung: it is cancelled.
SETTLE_SECONDS = 30.0
SKIPPED_STEP = "SKIPPED: "  # prefix of the run steps that name a task some node reported SKIPPED

Note = Callable[[], None]  # an observer call or a release, made outside the lock


def chunk_forks(capacity: int) -> int:
    """Forks per process: the window's capacity plus a few hosts waiting at the gate to refill slots."""
    return capacity + min(32, max(2, capacity // 10))


class RolloutObserver(Protocol):
    """Live progress of a rollout (called from worker threads; implementations must be thread-safe)."""

    def rollout_started(self, run_id: str, plan: RolloutPlan, todo: Sequence[str]) -> None: ...

    def node_started(self, host: str, batch: int) -> None: ...

    def node_finished(self, host: str, batch: int, state: str, reason: str | None,
                      seconds: float | None) -> None: ...

    def stopped(self, reason: str) -> None: ...


@dataclass(frozen=True)
class RolloutJob:
    run_id: str
    playbook: Path
    plan: RolloutPlan
    hosts: Mapping[str, Host]
    order: tuple[str, ...]  # the nodes to run, in start order
    options: RunOptions
    marker_task: str  # the kind's last task: its ok/changed event means the node is done
    budget: FailureBudget
    chunk_size: int = DEFAULT_CHUNK
    node_deadline: float | None = None
    rate: float | None = None  # admissions per second at most (join pacing; None: no ceiling)
    prepare_workers: int = PREPARE_WORKERS
    prepare_ahead: int = PREPARE_AHEAD
    settle_seconds: float = SETTLE_SECONDS
    done_before: int = 0  # earlier attempts of the same run (resume), for the failure budget
    failed_before: int = 0
    run_dir: Path | None = None  # holds the gate socket; default <state dir>/runs/<run_id>


def call_notes(notes: Iterable[Note]) -> None:
    """Make the notes (outside the lock); one that raises is logged, never breaks the rollout."""
    for note in notes:
        try:
            note()
        except Exception:  # progress output must never break the rollout
            log.exception("rollout observer failed")
