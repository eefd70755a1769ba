"""The executor's drain pool: a node guard's work (cordon + drain, uncordon) on a few threads.

Nodes are prepared in start order, ahead of admission, while earlier nodes run: a node is admitted
once its preparation is done and its host waits at the gate. Release (uncordon) runs on the pool
too, never on a process's event thread (kubectl may be slow).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from ufcctl.domain.inventory.model import Host
from ufcctl.rollout.job import Note
from ufcctl.rollout.kind import NodeGuard

log = logging.getLogger(__name__)

# (host, the guard's skip reason or None, the exception it raised or None), called on a pool thread
Prepared = Callable[[str, str | None, Exception | None], None]


class DrainPool:
    """Prepares nodes on the pool and reports each to `on_prepared`; `prepared` (nodes prepared and
    not yet released) is kept under the executor's lock."""

    def __init__(self, guard: NodeGuard, hosts: Mapping[str, Host], workers: int, on_prepared: Prepared):
        self.guard = guard
        self.hosts = hosts
        self.on_prepared = on_prepared
        self.pool = ThreadPoolExecutor(workers, "rollout-prepare")
        self.prepared: set[str] = set()

    def prepare(self, host: str) -> None:
        self.pool.submit(self._prepare, host)

    def _prepare(self, host: str) -> None:
        skip: str | None = None
        error: Exception | None = None
        try:
            skip = self.guard.prepare(self.hosts[host])
        except Exception as err:  # e.g. a drain that timed out: the node is not upgraded
            error = err
        self.on_prepared(host, skip, error)

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
