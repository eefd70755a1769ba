"""The executor's drain pool: a node guard's work (cordon + drain, uncordon) on a few threads.

Nodes are prepared in start order, ahead of admission, while earlier nodes run: a node is admitted
once its preparation is done and its host waits at the gate. Release (uncordon) runs on the pool
too, never on a process's event thread (kubectl may be slow).

Before the first preparation the guard names the run's nodes that need none (`NodeGuard.at_target`:
for upgrade-drivers, the Nodes whose labels say the target driver and firmware; one kubectl call for
the whole run, not one per node). Those are admitted without being touched and are never released;
their gate's go says so (`labels_at_target`), so their play refuses to install undrained.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from ufcctl.domain.inventory.model import Host
from ufcctl.rollout.job import Note
from ufcctl.rollout.kind import NodeGuard

log = logging.getLogger(__name__)

# (host, the guard's skip reason or None, the exception it raised or None, whether it was drained),
# called on a pool thread
Prepared = Callable[[str, str | None, Exception | None, bool], None]


class DrainPool:
    """Prepares nodes on the pool and reports each to `on_prepared`; `prepared` (nodes prepared and
    not yet released) is kept under the executor's lock."""

    def __init__(self, guard: NodeGuard, hosts: Mapping[str, Host], workers: int, on_prepared: Prepared,
                 order: Sequence[str] = ()):
        self.guard = guard
        self.hosts = hosts
        self.order = order  # the run's nodes: what at_target is asked about, once
        self.on_prepared = on_prepared
        self.pool = ThreadPoolExecutor(workers, "rollout-prepare")
        self.prepared: set[str] = set()
        self._survey_lock = threading.Lock()
        self._at_target: set[str] | None = None

    def at_target(self) -> set[str]:
        """The run's nodes that need no preparation, asked once (the pool's other threads wait for it). A
        failed read finds none: every node is then prepared, as without labels."""
        with self._survey_lock:
            if self._at_target is None:
                try:
                    self._at_target = self.guard.at_target([self.hosts[h] for h in self.order])
                except Exception:
                    log.exception("reading which nodes are at target failed: every node is drained")
                    self._at_target = set()
            return self._at_target

    def prepare(self, host: str) -> None:
        self.pool.submit(self._prepare, host)

    def _prepare(self, host: str) -> None:
        if host in self.at_target():
            self.on_prepared(host, None, None, False)
            return
        skip: str | None = None
        error: Exception | None = None
        try:
            skip = self.guard.prepare(self.hosts[host])
        except Exception as err:  # e.g. a drain that timed out: the node is not upgraded
            error = err
        self.on_prepared(host, skip, error, True)

    def release_note(self, host: str, ok: bool) -> Note:
        """Release (uncordon) on the pool, made outside the lock; a failed node stays cordoned."""
        self.prepared.discard(host)
        guard, pool, node = self.guard, self.pool, self.hosts[host]

        def release() -> None:
            try:
                guard.release(node, ok)
            except Exception:
                log.exception("releasing %s failed", node.name)

        return lambda: _submit(pool, release)

    def shutdown(self) -> None:
        self.pool.shutdown(wait=True)


def _submit(pool: ThreadPoolExecutor, work: Callable[[], None]) -> None:
    try:
        pool.submit(work)
    except RuntimeError:  # the pool is shut down (the rollout is over): release here
        work()
