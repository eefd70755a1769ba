"""Pacing: a ceiling on how many nodes a rollout admits per second (a token bucket, no clock of its own).

Why a node phase needs it: every node that joins a cluster sends a burst of writes to the
apiservers (CSR create and approval, Node and Lease objects, status updates, then one pod per
DaemonSet scheduled, bound and started on it). Hundreds of joins at once can overload the apiservers
(docs/reference/scale.md: seed 003, "adding hundreds of nodes at once can overload API server
capacity. Smoothing this out, even just by a few seconds, will help"). The window bounds nodes in
flight; the pacer bounds how fast they start, whatever the window.

The caller passes the time (`now`, seconds on any monotonic clock) to every call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Pacer:
    """At most `rate` admissions per second on average, at most `burst` at once (None: no ceiling)."""

    rate: float | None
    burst: int = 1
    _tokens: float = field(init=False, default=0.0)
    _last: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.rate is not None and not (self.rate > 0 and math.isfinite(self.rate)):
            raise ValueError(f"rate {self.rate} must be a positive number of admissions per second")
        if self.burst < 1:
            raise ValueError(f"burst {self.burst} must be at least 1")
        self._tokens = float(self.burst)

    def _refill(self, now: float) -> None:
        if self.rate is None:
            return
        if self._last is not None and now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
        if self._last is None or now > self._last:
            self._last = now

    def allowance(self, now: float) -> int | None:
        """How many nodes may be admitted now (None: any number)."""
        if self.rate is None:
            return None
        self._refill(now)
        return int(self._tokens + 1e-9)

    def take(self, count: int, now: float) -> None:
        """`count` nodes were admitted at `now` (never more than the allowance)."""
        if self.rate is None or count == 0:
            return
        self._refill(now)
        if count > int(self._tokens + 1e-9):
            raise ValueError(f"{count} admissions exceed the allowance of {int(self._tokens)}")
        self._tokens -= count

    def wait(self, now: float) -> float:
        """Seconds until the next admission is allowed (0 when one is allowed now)."""
        if self.rate is None:
            return 0.0
        self._refill(now)
        missing = 1.0 - self._tokens
        return 0.0 if missing <= 1e-9 else missing / self.rate


def paced_seconds(nodes: int, rate: float | None, burst: int = 1) -> float:
    """The least time admitting `nodes` can take at `rate` (the first `burst` start at once)."""
    if rate is None or nodes <= burst:
        return 0.0
    return (nodes - burst) / rate
