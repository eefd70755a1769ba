"""The rollout store's records: runs, nodes and node changes as read from and written to state.db
(ufcctl/rollout/store.py), and how a row becomes one."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from dataclasses import dataclass, field
from typing import Any


class StateError(RuntimeError):
    """The store refused a change (unknown run, a node not in the expected state)."""


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    kind: str
    inventory: str
    params: dict[str, Any]
    status: str
    created: float
    updated: float
    finished: float | None = None
    message: str | None = None
    steps: dict[str, str] = field(default_factory=dict)  # step -> what happened (e.g. drain: skipped ...)
    pid: int | None = None
    hostname: str | None = None
    counts: dict[str, int] = field(default_factory=dict)  # node state -> count
    # a hash of the inventory's files when the run began (None: a run of a schema-1 store)
    inventory_fingerprint: str | None = None

    def controller_alive(self) -> bool:
        """True when the process that owns this run still runs on this machine."""
        if self.pid is None or self.hostname != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


@dataclass(frozen=True)
class NodeRecord:
    host: str
    batch: int
    position: int
    state: str
    reason: str | None = None
    changed: bool | None = None
    attempts: int = 0
    started: float | None = None
    finished: float | None = None
    ansible_run: str | None = None

    @property
    def seconds(self) -> float | None:
        if self.started is None or self.finished is None:
            return None
        return self.finished - self.started


@dataclass(frozen=True)
class NodeChange:
    """One node's move, for StateStore.apply: running (with its Ansible run), an end, or back to pending."""

    host: str
    state: str
    at: float  # when it happened (time.time()): started for running, finished for an end
    ansible_run: str | None = None
    reason: str | None = None
    changed: bool | None = None


def _run_record(row: sqlite3.Row, counts: dict[str, int]) -> RunRecord:
    return RunRecord(
        run_id=row["run_id"], kind=row["kind"], inventory=row["inventory"], params=json.loads(row["params"]),
        status=row["status"], created=row["created"], updated=row["updated"], finished=row["finished"],
        message=row["message"], steps=json.loads(row["steps"] or "{}"), pid=row["pid"],
        hostname=row["hostname"], counts=counts, inventory_fingerprint=row["inventory_fingerprint"],
    )


def _node_record(row: sqlite3.Row) -> NodeRecord:
    return NodeRecord(
        host=row["host"], batch=row["batch"], position=row["position"], state=row["state"],
        reason=row["reason"], changed=None if row["changed"] is None else bool(row["changed"]),
        attempts=row["attempts"], started=row["started"], finished=row["finished"],
        ansible_run=row["ansible_run"],
    )
