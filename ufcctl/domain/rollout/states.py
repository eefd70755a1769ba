"""Node states of a rollout and the transitions between them (the state machine the store enforces)."""

from __future__ import annotations

import re
from collections.abc import Mapping

PENDING = "pending"
RUNNING = "running"
DONE = "done"
FAILED = "failed"
SKIPPED = "skipped"
NODE_STATES = (PENDING, RUNNING, DONE, FAILED, SKIPPED)
FINISHED = frozenset({DONE, FAILED, SKIPPED})

# Allowed moves. running -> pending happens only on resume: the controller died while the node
# was in flight, so whether its work finished is unknown and it is run again (roles are
# idempotent: a node already at the target version is left alone). failed/skipped -> pending is
# --retry-failed. done is final: resume never redoes a done node.
TRANSITIONS: Mapping[str, frozenset[str]] = {
    PENDING: frozenset({RUNNING, SKIPPED}),
    RUNNING: frozenset({DONE, FAILED, SKIPPED, PENDING}),
    DONE: frozenset(),
    FAILED: frozenset({PENDING}),
    SKIPPED: frozenset({PENDING}),
}

# Run states: running while a controller works on it; the others say why it is not.
RUN_RUNNING = "running"
RUN_DONE = "done"  # every node done or skipped
RUN_FAILED = "failed"  # finished with failed nodes (budget not exceeded)
RUN_STOPPED = "stopped"  # the failure budget or a canary failure stopped new work
RUN_INTERRUPTED = "interrupted"  # the controller was interrupted (Ctrl-C); resume continues
RUN_STATES = (RUN_RUNNING, RUN_DONE, RUN_FAILED, RUN_STOPPED, RUN_INTERRUPTED)


class TransitionError(ValueError):
    """A node state change the state machine does not allow."""


def previous_states(new: str) -> frozenset[str]:
    """States a node may be in to move to `new`."""
    if new not in TRANSITIONS:
        raise TransitionError(f"unknown node state {new!r}")
    return frozenset(old for old, targets in TRANSITIONS.items() if new in targets)


def check_transition(old: str, new: str) -> None:
    if old not in TRANSITIONS or new not in TRANSITIONS:
        raise TransitionError(f"unknown node state in {old!r} -> {new!r}")
    if new not in TRANSITIONS[old]:
        raise TransitionError(f"a {old} node cannot become {new}")


def run_outcome(counts: Mapping[str, int], stop_reason: str | None) -> str:
    """The run state once no node is in flight, from node counts per state."""
    if stop_reason:
        return RUN_STOPPED
    if counts.get(PENDING, 0) or counts.get(RUNNING, 0):
        return RUN_INTERRUPTED
    return RUN_FAILED if counts.get(FAILED, 0) else RUN_DONE


# A run id names a directory (.ufc/runs/<run id>/) and a lock file: what engine/runner.py new_run_id makes
# (`<playbook or kind>-<YYYYmmdd>-<HHMMSS>-<hex>`), letters, digits, '.', '_', '+', '-', never '/' or a
# leading dot. Checked wherever an id is read back (state.db rows a hand may have edited, a run's own
# directory), so `../../x` can never put a run directory outside the state directory.
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")


def run_id_problem(run_id: object) -> str | None:
    """Why `run_id` is no run id (one phrase), or None when it is one."""
    if not isinstance(run_id, str):
        return f"not text ({type(run_id).__name__})"
    if not _RUN_ID.fullmatch(run_id):
        return ("not a run id: letters, digits, '.', '_', '+' and '-' only, starting with a letter or digit, "
                "at most 200")
    return None
