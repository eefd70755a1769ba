"""What `ufcctl etcd status` and `ufcctl etcd prune` found: one row per member, one status per
cluster, the keys counted (and deleted) per prefix. Pure data; ufcctl/app/etcd_maint.py fills it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ufcctl.domain.etcd.defrag import LastDefrag


@dataclass(frozen=True)
class MemberRow:
    member: str
    endpoint: str
    health: str  # healthy, or why not
    leader: bool
    db_size: int | None
    db_size_in_use: int | None
    fragmentation_percent: float | None
    alarms: tuple[str, ...]
    last_defrag: LastDefrag | None
    version: str = ""
    revision: int | None = None


@dataclass(frozen=True)
class ClusterStatus:
    cluster: str
    healthy: bool
    problems: tuple[str, ...]
    leader: str | None
    alarms: tuple[str, ...]
    members: tuple[MemberRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "healthy": self.healthy,
            "problems": list(self.problems),
            "leader": self.leader,
            "alarms": list(self.alarms),
            "members": [
                {
                    **{k: v for k, v in m.__dict__.items() if k != "last_defrag"},
                    "alarms": list(m.alarms),
                    "last_defrag": None if m.last_defrag is None else m.last_defrag.__dict__,
                }
                for m in self.members
            ],
        }


@dataclass(frozen=True)
class PruneResult:
    cluster: str
    counts: dict[str, int]  # prefix -> keys found
    deleted: dict[str, int] = field(default_factory=dict)  # prefix -> keys deleted (--yes)
