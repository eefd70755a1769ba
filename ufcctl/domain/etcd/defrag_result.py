"""What a defrag run did: one outcome per member (action, reason, sizes before and after), the
compaction, the alarms disarmed, notes; the agent logs it as JSON and the controller prints it.

Pure data, standard library only: shipped to etcd nodes with the agent (ufcctl/nodeside/__init__.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ufcctl.domain.etcd.defrag import MemberStatus


@dataclass(frozen=True)
class Sizes:
    db_size: int
    db_size_in_use: int

    @staticmethod
    def of(status: MemberStatus | None) -> Sizes | None:
        return Sizes(status.db_size, status.db_size_in_use) if status else None


@dataclass(frozen=True)
class MemberOutcome:
    member: str
    action: str  # defragmented, would-defragment, skipped, failed
    reason: str
    leader: bool = False
    before: Sizes | None = None
    after: Sizes | None = None
    seconds: float = 0.0
    finished_at: float = 0.0


@dataclass
class RunReport:
    cluster: str
    outcomes: list[MemberOutcome] = field(default_factory=list)
    compacted_to: int | None = None
    disarmed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(o.action == "failed" for o in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "outcomes": [asdict(o) for o in self.outcomes],
            "compacted_to": self.compacted_to,
            "disarmed": self.disarmed,
            "notes": self.notes,
        }
