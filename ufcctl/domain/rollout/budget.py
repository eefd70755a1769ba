"""The failure budget: when failed nodes exceed a share of the processed ones, no new work starts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ufcctl.errors import shown

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%?\s*$")


class BudgetError(ValueError):
    """A --max-fail value that is not a percentage between 0 and 100."""


def parse_percent(value: str) -> float:
    """'10%', '10' or '2.5%' -> 10.0 / 10.0 / 2.5."""
    match = _PERCENT.match(value)
    if not match or float(match.group(1)) > 100:
        raise BudgetError(f"{shown(value)} is not a percentage between 0 and 100 (e.g. 5%)")
    return float(match.group(1))


@dataclass(frozen=True)
class FailureBudget:
    """Exceeded when failed * 100 > max_fail_percent * max(processed, floor).

    Strictly greater, like Ansible's max_fail_percentage (docs/reference/scale.md §1.4). `floor` (one
    batch) keeps a single early failure from stopping a 16,000-node rollout with --max-fail 1%:
    the first failure in a batch of 200 is measured against 200 nodes, not against 1.
    --max-fail 0 stops at the first failure whatever the floor.
    """

    max_fail_percent: float
    floor: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.max_fail_percent <= 100:
            raise BudgetError(f"max fail {self.max_fail_percent}% is not between 0 and 100")
        if self.floor < 1:
            raise BudgetError(f"budget floor {self.floor} must be at least 1")

    def exceeded(self, failed: int, processed: int) -> bool:
        return failed * 100 > self.max_fail_percent * max(processed, self.floor)

    def describe(self, failed: int, processed: int) -> str:
        return (f"{failed} failed of {processed} processed node(s) exceeds --max-fail "
                f"{self.max_fail_percent:g}% (measured against at least {self.floor})")
