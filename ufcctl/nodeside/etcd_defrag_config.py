"""The defrag agent's settings (AgentConfig) and the JSON file roles/etcd writes them to.

The agent's command line (etcd_agent) and the member command (etcd_join) read the file;
`ufcctl etcd defrag` on the controller builds an AgentConfig from the inventory instead.

Runs on the nodes: imports follow the rule in ufcctl/nodeside/__init__.py.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass

from ufcctl.domain.etcd.defrag import DefragSettings
from ufcctl.domain.etcd.rule import DEFAULT_RULE, parse_rule
from ufcctl.engine.etcd_client import DEFRAG_TIMEOUT, TlsFiles


@dataclass(frozen=True)
class AgentConfig:
    cluster: str
    endpoints: tuple[str, ...]
    tls: TlsFiles | None
    settings: DefragSettings
    member: str | None = None  # the agent's own member; None: every member (controller runs)
    by: str = "ufcctl"
    dry_run: bool = False
    # A crashed agent's lock disappears with its lease after at most this long.
    lock_ttl_seconds: int = 60
    lock_wait_seconds: float = 900.0
    leader_wait_seconds: float = 600.0
    poll_seconds: float = 2.0
    defrag_timeout_seconds: float = DEFRAG_TIMEOUT
    # node exporter textfile collector directory for the last-run gauges; empty: no metrics
    textfile_dir: str = ""



def load_config(path: str, dry_run: bool = False) -> AgentConfig:
    """Read the agent's JSON config (written by roles/etcd); errors name the file and the key."""
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
        settings = DefragSettings(
            rule=parse_rule(str(raw.get("rule", DEFAULT_RULE))),
            quota_bytes=int(raw["quota_bytes"]),
            min_interval_seconds=float(raw.get("min_interval_seconds", 3600)),
            compaction_keep_revisions=int(raw.get("compaction_keep_revisions", 1000)),
            disarm_threshold=float(raw.get("disarm_threshold", 0.9)),
            move_leader=bool(raw.get("move_leader", False)),
        )
        tls = TlsFiles(raw["ca"], raw["cert"], raw["key"]) if raw.get("ca") else None
        return AgentConfig(
            cluster=str(raw["cluster"]),
            endpoints=tuple(raw["endpoints"]),
            tls=tls,
            settings=settings,
            member=raw.get("member"),
            by=f"agent@{socket.gethostname()}",
            dry_run=dry_run,
            lock_ttl_seconds=int(raw.get("lock_ttl_seconds", 60)),
            lock_wait_seconds=float(raw.get("lock_wait_seconds", 900)),
            leader_wait_seconds=float(raw.get("leader_wait_seconds", 600)),
            defrag_timeout_seconds=float(raw.get("defrag_timeout_seconds", DEFRAG_TIMEOUT)),
            textfile_dir=str(raw.get("textfile_dir") or ""),
        )
    except OSError as err:
        raise SystemExit(f"{path}: cannot read: {err.strerror}") from err
    except (ValueError, KeyError, TypeError) as err:
        raise SystemExit(f"{path}: bad config: {type(err).__name__}: {err}") from err
