"""The compaction of one defrag run (etcd_defrag.py): compacted once, before any member is judged, and
then settled on each member so that its status shows the pages the compaction freed.

Runs on the nodes: imports follow the rule in ufcctl/nodeside/__init__.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ufcctl.domain.etcd.defrag import ClusterView, compaction_revision, settle_key
from ufcctl.domain.etcd.defrag_result import RunReport
from ufcctl.engine.etcd_client import ClusterClient, EtcdError, Gateway
from ufcctl.nodeside.etcd_defrag_config import AgentConfig

# etcd commits its backend every --backend-batch-interval (100 ms by default; the etcd role keeps
# the default), so a write is committed this long after the member applied it.
BACKEND_COMMIT_WAIT = 0.3


class Compaction:
    """The run's compaction: what it compacted to and its notes go to the run's `report`."""

    def __init__(self, cfg: AgentConfig, client: ClusterClient, log: Callable[[str], None],
                 sleep: Callable[[float], None], report: RunReport):
        self.cfg, self.client, self.log, self.sleep, self.report = cfg, client, log, sleep, report

    def once(self, view: ClusterView) -> None:
        """Compact the cluster to `revision - keep`, once per run (report.compacted_to says to what)."""
        if self.report.compacted_to is not None:
            return
        revision = max(s.revision for s in view.statuses.values())
        target = compaction_revision(revision, self.cfg.settings.compaction_keep_revisions)
        if target is None:
            self.report.compacted_to = 0
            return
        try:
            self.client.first("compact", target)
            self.log(f"cluster={self.cfg.cluster} action=compacted revision={target} current={revision}")
        except EtcdError as err:
            if not err.compacted:  # a failed compaction does not stop the defrag (as etcd-defrag does)
                self.log(f"cluster={self.cfg.cluster} action=compaction-failed revision={target} error={err}")
                self.report.notes.append(f"compaction to {target} failed: {err.message}")
        self.report.compacted_to = target

    def settle(self, view: ClusterView, *names: str) -> ClusterView:
        """Make the status of members `names` show the pages the compaction freed.

        Two things hide them (CI saw two followers skipped with "rule false", and a leader that saw
        no due follower and went first, that way):
        - a physical compaction waits only on the member that served it; a follower may still be
          deleting. etcd runs a member's compactions in order, so a further compaction served by
          the member returns once every earlier one finished there (compact_through);
        - etcd computes dbSizeInUse when a backend transaction begins, from bbolt's free-page
          count, and pages freed by a commit stay pending until a later one. Measured on the lab
          (pods cluster, 24 MB written then deleted): after a physical compaction every member
          still showed 5.4-6.4 MiB free for 3 s of quiet; after one write, 29.9-30.4 MiB. So two
          marker writes follow, each answered once the serving member applied it and followed by
          a wait longer than etcd's backend commit interval.
        """
        if not self.report.compacted_to or self.cfg.dry_run:
            return view
        gateway, served_by = None, ""
        for name in names:
            member = view.member(name)
            if member is None or name not in view.statuses:
                continue
            gateway, served_by = self.client.gateway(member.endpoint), name
            if not self.compact_through(gateway, name):
                return view
        if gateway is None:
            return view
        for _ in range(2):
            if self.mark(gateway, served_by) is None:
                break
            self.sleep(BACKEND_COMMIT_WAIT)
        return self.client.view()

    def mark(self, gateway: Gateway, name: str) -> int | None:
        """The settle marker write served by member `name`: the revision it created, or None
        when it was refused (e.g. NOSPACE refuses writes: then decide on what the status says)."""
        try:
            return gateway.put(settle_key(self.cfg.cluster), json.dumps({"by": self.cfg.by}))
        except EtcdError as err:
            self.log(f"cluster={self.cfg.cluster} member={name} settle write failed: {err}")
            return None

    def compact_through(self, gateway: Gateway, name: str) -> bool:
        """A physical compaction to `revision - keep` as of now, served by member `name`, after a
        marker write so there is a revision to go to. False when the write was refused (NOSPACE)."""
        latest = self.mark(gateway, name)
        if latest is None:
            return False
        target = compaction_revision(latest, self.cfg.settings.compaction_keep_revisions)
        if target is None:
            return True
        try:
            gateway.compact(target)
        except EtcdError as err:  # compacted further by someone else: no proof this member is done
            self.log(
                f"cluster={self.cfg.cluster} member={name} could not settle the compaction through "
                f"this member ({err.message}); its sizes may lag"
            )
        return True
