"""The validation result and `validate(objects) -> Report`, the Python API other tools call."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.placement.parse import parse_objects
from ufcctl.domain.placement.rules import DEFAULT_SUPER_POD_SIZE, Options, run_rules
from ufcctl.domain.placement.state import build_state
from ufcctl.domain.placement.violations import ERROR, Violation


@dataclass(frozen=True, slots=True)
class Checked:
    nodes: int
    pods: int  # pods of NPU jobs (a standalone NPU pod is a one-pod job)
    jobs: int


@dataclass(frozen=True, slots=True)
class Report:
    checked: Checked
    violations: tuple[Violation, ...]

    @property
    def valid(self) -> bool:
        """No error-severity violation (warnings do not make a placement invalid)."""
        return not any(violation.severity == ERROR for violation in self.violations)

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "checked": {"nodes": self.checked.nodes, "pods": self.checked.pods, "jobs": self.checked.jobs},
            "violations": [violation.to_dict() for violation in self.violations],
        }


def validate(objects: Iterable[Any], *, super_pod_size: int = DEFAULT_SUPER_POD_SIZE) -> Report:
    """Validate decoded Kubernetes objects (dicts or `List`s); raises ParseError on unreadable input."""
    return validate_documents(((None, obj) for obj in objects), super_pod_size=super_pod_size)


def validate_documents(
    documents: Iterable[tuple[str | None, Any]], *, super_pod_size: int = DEFAULT_SUPER_POD_SIZE
) -> Report:
    """Like `validate`, with each document paired with the file it came from (named in errors)."""
    state = build_state(parse_objects(documents))
    violations = run_rules(state, Options(super_pod_size=super_pod_size))
    return Report(Checked(len(state.nodes), state.pods_checked, len(state.jobs)), tuple(violations))
