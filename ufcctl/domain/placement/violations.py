"""Violation codes of the placement contract (docs/reference/npu-placement.md) and the Violation record."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Code(StrEnum):
    """Exactly the codes of the contract, request level first, in the contract's order."""

    CHIP_COUNT = "CHIP_COUNT"
    SELECTOR_MISSING = "SELECTOR_MISSING"
    SP_BLOCK = "SP_BLOCK"
    TOR_LABEL = "TOR_LABEL"
    SELECTOR_MISMATCH = "SELECTOR_MISMATCH"
    COUNT_MISMATCH = "COUNT_MISMATCH"
    CHIP_MISSING = "CHIP_MISSING"
    CHIP_CONFLICT = "CHIP_CONFLICT"
    CHIP_UNHEALTHY = "CHIP_UNHEALTHY"
    HCCS_RING = "HCCS_RING"
    RING_BALANCE = "RING_BALANCE"
    CHIP_PAIR = "CHIP_PAIR"
    NODE_SHARED = "NODE_SHARED"
    GANG_INCOMPLETE = "GANG_INCOMPLETE"
    SUPERPOD_SPLIT = "SUPERPOD_SPLIT"
    TOR_SPAN = "TOR_SPAN"
    TOR_CM_MISSING = "TOR_CM_MISSING"
    RANKTABLE = "RANKTABLE"
    NODE_UNKNOWN = "NODE_UNKNOWN"


ERROR = "error"
WARNING = "warning"

# Every code is an error except these (contract: "error unless marked warning").
WARNING_CODES = frozenset({Code.NODE_UNKNOWN})

CODE_ORDER = {code: index for index, code in enumerate(Code)}


@dataclass(frozen=True, slots=True)
class Violation:
    code: Code
    job: str | None  # "namespace/name"
    pod: str | None  # "namespace/name"
    node: str | None
    message: str

    @property
    def severity(self) -> str:
        return WARNING if self.code in WARNING_CODES else ERROR

    def to_dict(self) -> dict[str, str | None]:
        return {
            "code": self.code.value,
            "severity": self.severity,
            "job": self.job,
            "pod": self.pod,
            "node": self.node,
            "message": self.message,
        }

    def sort_key(self) -> tuple[str, str, str, int, str]:
        return (self.job or "", self.pod or "", self.node or "", CODE_ORDER[self.code], self.message)
