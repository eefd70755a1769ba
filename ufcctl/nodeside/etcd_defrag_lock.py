"""The per-cluster defrag lock in etcd: one member of a cluster is defragmented at a time.

Runs on the nodes: imports follow the rule in ufcctl/nodeside/__init__.py.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable

from ufcctl.domain.etcd.defrag import lock_key
from ufcctl.engine.etcd_client import ClusterClient, EtcdError
from ufcctl.nodeside.etcd_defrag_config import AgentConfig

Log = Callable[[str], None]


class DefragLock:
    """The per-cluster defrag lock: a key created only if absent, attached to a lease kept alive by a
    thread, so a crashed agent's lock expires with its lease (after lock_ttl_seconds)."""

    def __init__(self, client: ClusterClient, cfg: AgentConfig, log: Log):
        self.client, self.cfg, self.log = client, cfg, log
        self.key = lock_key(cfg.cluster)
        self.value = json.dumps({"by": cfg.by, "pid": os.getpid(), "at": int(time.time())})
        self.lease: str | None = None
        self.avoid: str | None = None  # the endpoint being defragmented: refresh through another one
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self, sleep: Callable[[float], None], clock: Callable[[], float]) -> bool:
        self.lease = self.client.first("lease_grant", self.cfg.lock_ttl_seconds)
        deadline = clock() + self.cfg.lock_wait_seconds
        holder = None
        while True:
            created, current = self.client.first("create", self.key, self.value, self.lease)
            if created:
                self._thread = threading.Thread(target=self._keepalive, daemon=True, name="lock-keepalive")
                self._thread.start()
                return True
            if current != holder:
                holder = current
                self.log(f"cluster={self.cfg.cluster} lock held by {current}; waiting")
            if clock() >= deadline:
                self.release()
                return False
            sleep(self.cfg.poll_seconds)

    def _keepalive(self) -> None:
        interval = max(self.cfg.lock_ttl_seconds / 3.0, 1.0)
        while not self._stop.wait(interval):
            try:
                self.client.first("lease_keepalive", self.lease, avoid=self.avoid)
            except EtcdError as err:  # the next try may reach another member
                self.log(f"cluster={self.cfg.cluster} lock lease refresh failed: {err}")

    def release(self) -> None:
        self._stop.set()
        if self.lease is None:
            return
        try:
            self.client.first("lease_revoke", self.lease)  # deletes the lock key with it
        except EtcdError as err:
            self.log(f"cluster={self.cfg.cluster} lock release failed ({err}); it expires with its lease")
        self.lease = None
