"""What every rule shares: its options, its signature, and small formatting helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ufcctl.domain.placement.model import ClusterState
from ufcctl.domain.placement.violations import Code, Violation

# Volcano init-param `super-pod-size`: nodes per physical SuperPoD (ascend-for-volcano plugin/const.go).
DEFAULT_SUPER_POD_SIZE = 48


@dataclass(frozen=True, slots=True)
class Options:
    super_pod_size: int = DEFAULT_SUPER_POD_SIZE


Check = Callable[[ClusterState, Options], Iterable[Violation]]


@dataclass(frozen=True, slots=True)
class Rule:
    """One check. `needs_cluster`: runs only when the input holds Nodes (contract, Clarifications)."""

    codes: tuple[Code, ...]
    needs_cluster: bool
    check: Check


def counts(values: Iterable[int]) -> str:
    """{1,2,3,4,8} -> "1-4, 8": a set of allowed counts, readable."""
    ordered = sorted(values)
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ordered[i]}-{ordered[j]}")
        else:
            parts.extend(str(value) for value in ordered[i : j + 1])
        i = j + 1
    return ", ".join(parts) or "none"


def chip_list(chips: Iterable[int]) -> str:
    return ",".join(str(chip) for chip in sorted(chips))


def positive_int(raw: str | None) -> int | None:
    """An sp-block value as a positive integer, else None."""
    if raw is None:
        return None
    text = raw.strip()
    if text.isascii() and text.isdigit() and int(text) > 0:
        return int(text)
    return None
