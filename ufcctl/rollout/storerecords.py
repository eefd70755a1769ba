"""The rollout store's records: runs, nodes and node changes as read from and written to state.db
(ufcctl/rollout/store.py), and how a row becomes one."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from ufcctl.domain.rollout.states import NODE_STATES, RUN_STATES
from ufcctl.errors import shown


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
    """The run of `row`; TypeError or ValueError (store._read_back: a corrupt row) for a column a hand edit
    left of the wrong type or out of its states, before any of it names a directory or drives a run."""
    params = _json_object(row, "params")
    steps = _json_object(row, "steps", "{}")
    return RunRecord(
        run_id=_column(row, "run_id", str), kind=_column(row, "kind", str),
        inventory=_column(row, "inventory", str), params=params,
        status=_state(row, "status", RUN_STATES), created=_column(row, "created", _NUMBER),
        updated=_column(row, "updated", _NUMBER), finished=_column(row, "finished", _NUMBER, optional=True),
        message=_column(row, "message", str, optional=True),
        steps={str(k): _value(f"steps[{k}]", v, str) for k, v in steps.items()},
        pid=_column(row, "pid", int, optional=True), hostname=_column(row, "hostname", str, optional=True),
        counts=counts, inventory_fingerprint=_column(row, "inventory_fingerprint", str, optional=True),
    )


def _node_record(row: sqlite3.Row) -> NodeRecord:
    changed = _column(row, "changed", int, optional=True)
    return NodeRecord(
        host=_column(row, "host", str), batch=_column(row, "batch", int),
        position=_column(row, "position", int), state=_state(row, "state", NODE_STATES),
        reason=_column(row, "reason", str, optional=True), changed=None if changed is None else bool(changed),
        attempts=_column(row, "attempts", int), started=_column(row, "started", _NUMBER, optional=True),
        finished=_column(row, "finished", _NUMBER, optional=True),
        ansible_run=_column(row, "ansible_run", str, optional=True),
    )


_NUMBER = (int, float)


def _column(row: sqlite3.Row, name: str, kinds: type | tuple[type, ...], optional: bool = False) -> Any:
    return _value(name, row[name], kinds, optional)


def _value(name: str, value: Any, kinds: type | tuple[type, ...], optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, kinds):
        wanted = "a number" if kinds == _NUMBER else getattr(kinds, "__name__", str(kinds))
        raise TypeError(f"{name} holds {type(value).__name__}, not {wanted}")
    return value


def _state(row: sqlite3.Row, name: str, states: tuple[str, ...]) -> str:
    value = _column(row, name, str)
    if value not in states:
        raise ValueError(f"{name} {shown(value)} is none of {', '.join(states)}")
    return value


def _json_object(row: sqlite3.Row, name: str, default: str | None = None) -> dict[str, Any]:
    text = row[name]
    if default is not None and text in (None, ""):
        text = default
    value = json.loads(_value(name, text, str))
    if not isinstance(value, dict):
        raise TypeError(f"{name} holds a JSON {type(value).__name__}, not an object")
    return value
