"""NPU placement validation: hardware profiles, the cluster model, rules and `validate(objects) -> Report`."""

from __future__ import annotations

from ufcctl.domain.placement.parse import ParseError
from ufcctl.domain.placement.profiles import (
    DEFAULT_ACCELERATOR_TYPE,
    PROFILES,
    DuplicateProfileError,
    HardwareProfile,
    ProfileRegistry,
    UnknownProfileError,
    profile_for,
)
from ufcctl.domain.placement.report import Checked, Report, validate, validate_documents
from ufcctl.domain.placement.rules import DEFAULT_SUPER_POD_SIZE, RULES
from ufcctl.domain.placement.violations import ERROR, WARNING, Code, Violation

__all__ = [
    "DEFAULT_ACCELERATOR_TYPE",
    "DEFAULT_SUPER_POD_SIZE",
    "ERROR",
    "PROFILES",
    "RULES",
    "WARNING",
    "Checked",
    "Code",
    "DuplicateProfileError",
    "HardwareProfile",
    "ParseError",
    "ProfileRegistry",
    "Report",
    "UnknownProfileError",
    "Violation",
    "profile_for",
    "validate",
    "validate_documents",
]
