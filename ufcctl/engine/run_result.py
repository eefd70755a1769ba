"""What one Ansible run did: a HostResult per host (counts like Ansible's recap, the first failure)
and the RunResult of the whole run (status, rc, hosts not run, Ansible's last lines, steps a role
reported SKIPPED), as summary.json keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HOST_STATUSES = ("ok", "changed", "failed", "unreachable", "skipped")


@dataclass
class HostResult:
    """What happened on one host in one run (counts are host-tasks, like Ansible's recap)."""

    host: str
    ok: int = 0
    changed: int = 0
    failed: int = 0
    skipped: int = 0
    unreachable: bool = False
    failed_task: str | None = None
    message: str | None = None
    # host-tasks that ran (ok, changed, failed, unreachable), leaving out the ones Ansible adds by
    # itself (role argument checks, fact gathering): 0 means the selection left nothing to do here
    ran: int = 0

    @property
    def status(self) -> str:
        if self.unreachable:
            return "unreachable"
        if self.failed:
            return "failed"
        if self.changed:
            return "changed"
        return "ok"

    @property
    def succeeded(self) -> bool:
        return not self.unreachable and not self.failed


@dataclass
class RunResult:
    run_id: str
    playbook: str
    status: str  # ansible-runner's: successful, failed, canceled, timeout
    rc: int
    hosts: dict[str, HostResult]
    run_dir: Path
    seconds: float
    check: bool = False
    # hosts that were asked for but never reported (e.g. the play's `hosts:` pattern excluded them)
    not_run: list[str] = field(default_factory=list)
    # Ansible's last lines outside host results: why a run failed before reaching any host
    output_tail: list[str] = field(default_factory=list)
    # steps a role reported SKIPPED (a task result whose msg says so): {"host", "task", "message"}
    skipped_steps: list[dict[str, str]] = field(default_factory=list)

    @property
    def failed_hosts(self) -> list[str]:
        return [h for h, r in self.hosts.items() if not r.succeeded]

    def failed_of(self, asked: Iterable[str]) -> list[str]:
        """The hosts of `asked` that failed or never reported, in the order asked."""
        return [h for h in asked if h not in self.hosts or not self.hosts[h].succeeded]

    def why(self, host: str | None) -> str:
        """What went wrong on `host`: its failure message, else Ansible's last lines outside host results
        (a run that failed before reaching the host)."""
        result = self.hosts.get(host) if host is not None else None
        return (result.message if result and result.message else None) or "; ".join(self.output_tail[-3:])

    @property
    def succeeded(self) -> bool:
        return self.rc == 0 and not self.failed_hosts

    @property
    def nothing_ran(self) -> bool:
        """No task ran on any host (tags or --limit matched nothing there, or all was skipped)."""
        return not any(r.ran for r in self.hosts.values())

    @property
    def outcome(self) -> str:
        """What to tell the user: runner's status, except that a run of no task is not "successful"."""
        return "nothing ran" if self.succeeded and self.nothing_ran else self.status

    def totals(self) -> dict[str, int]:
        totals = {"ok": 0, "changed": 0, "failed": 0, "skipped": 0, "unreachable": 0}
        for r in self.hosts.values():
            totals["ok"] += r.ok
            totals["changed"] += r.changed
            totals["failed"] += r.failed
            totals["skipped"] += r.skipped
            totals["unreachable"] += int(r.unreachable)
        return totals

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "playbook": self.playbook,
            "status": self.status,
            "rc": self.rc,
            "check": self.check,
            "seconds": round(self.seconds, 3),
            "totals": self.totals(),
            "hosts": {h: {**asdict(r), "status": r.status} for h, r in self.hosts.items()},
            "nothing_ran": self.nothing_ran,
            "not_run": self.not_run,
            "output_tail": self.output_tail,
            "skipped_steps": self.skipped_steps,
            "run_dir": str(self.run_dir),
        }
