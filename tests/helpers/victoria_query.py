"""Asking the lab's VictoriaMetrics from a lab test, and waiting for an answer to turn up."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def query(vm: str, expr: str) -> list[dict[str, Any]]:
    """The instant vector of `expr` (VictoriaMetrics' Prometheus-compatible API at `vm`)."""
    url = f"{vm}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 (a test-owned lab address)
        data = json.load(answer)
    assert data["status"] == "success", data
    return data["data"]["result"]


def wait_for(what: str, check: Callable[[], T], deadline: float, step: float = 1.0) -> tuple[T, float]:
    """The first true value of `check()` and the seconds it took; fails the test past `deadline`
    (a hang guard, not a timing assertion)."""
    start = time.monotonic()
    while True:
        value = check()
        if value:
            return value, time.monotonic() - start
        assert time.monotonic() - start < deadline, f"{what}: not within {deadline} s"
        time.sleep(step)
