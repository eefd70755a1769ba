"""The run store's duration queries: each node's measured time and failure floor, a run's median.

Read by the start order (domain/rollout/order.py, through StateStore.node_durations) and the plan's
projection (StateStore.median_node_seconds); on the store's connection, under its lock.
"""

from __future__ import annotations

import json
import sqlite3

from ufcctl.domain.rollout.states import FAILED


def node_durations(db: sqlite3.Connection, kind: str, runs: int) -> tuple[dict[str, float], dict[str, float]]:
    """Each node's newest record in the newest `runs` real runs of `kind`: (measured, floors).

    Measured: done with a change (a real install, not "already at target"). Floors: the node's
    newest record is a failure; it ran this long before it failed (a hang: until its deadline),
    so it is expected to take at least that. Dry runs install nothing and are left out. The
    rollout's start order reads these (domain/rollout/order.py).
    """
    measured: dict[str, float] = {}
    floors: dict[str, float] = {}
    rows = db.execute("SELECT run_id, params FROM runs WHERE kind = ? ORDER BY created DESC",
                      (kind,)).fetchall()
    real = [r["run_id"] for r in rows if not json.loads(r["params"]).get("dry_run")][:runs]
    for run_id in real:
        for host, state, seconds in db.execute(
            "SELECT host, state, finished - started FROM nodes WHERE run_id = ?"
            " AND ((state = 'done' AND changed = 1) OR state = 'failed')"
            " AND started IS NOT NULL AND finished IS NOT NULL", (run_id,)
        ):
            if host not in measured and host not in floors:
                (floors if state == FAILED else measured)[host] = seconds
    return measured, floors

def median_node_seconds(db: sqlite3.Connection, run_id: str) -> float | None:
    """Median duration of the run's nodes that were done with a change (a real install), or None."""
    times = sorted(
        r["d"] for r in db.execute(
            "SELECT finished - started AS d FROM nodes WHERE run_id = ? AND state = 'done'"
            " AND changed = 1 AND started IS NOT NULL AND finished IS NOT NULL", (run_id,)
        )
    )
    if not times:
        return None
    mid = len(times) // 2
    return times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2
