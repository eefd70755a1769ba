"""What a rollout did: per-node outcomes with durations and reasons, counts, and the run's status."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ufcctl.domain.rollout.states import FAILED, NODE_STATES, SKIPPED


@dataclass(frozen=True)
class NodeOutcome:
    host: str
    batch: int
    state: str
    reason: str | None = None
    changed: bool | None = None
    seconds: float | None = None
    attempts: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "batch": self.batch, "state": self.state, "reason": self.reason,
                "changed": self.changed, "seconds": None if self.seconds is None else round(self.seconds, 3),
                "attempts": self.attempts}


@dataclass(frozen=True)
class RolloutSummary:
    run_id: str
    kind: str
    status: str
    nodes: tuple[NodeOutcome, ...]
    message: str | None = None  # why it stopped, when it did
    seconds: float | None = None  # wall time of this invocation
    steps: Mapping[str, str] = field(default_factory=dict)  # e.g. drain -> "skipped: no kubeconfig"
    dry_run: bool = False

    @property
    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(NODE_STATES, 0)
        for node in self.nodes:
            counts[node.state] = counts.get(node.state, 0) + 1
        return counts

    @property
    def failed(self) -> list[NodeOutcome]:
        return [n for n in self.nodes if n.state == FAILED]

    @property
    def skipped(self) -> list[NodeOutcome]:
        return [n for n in self.nodes if n.state == SKIPPED]

    @property
    def changed(self) -> int:
        return sum(1 for n in self.nodes if n.changed)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "kind": self.kind, "status": self.status, "message": self.message,
            "dry_run": self.dry_run, "seconds": None if self.seconds is None else round(self.seconds, 3),
            "counts": self.counts, "changed": self.changed, "steps": dict(self.steps),
            "nodes": [n.to_json() for n in self.nodes],
        }
