"""Reading certificate and key files on the controller for the roles' PKI lookups: bytes and modes,
None for what is missing or unreadable (the domain code in ufcctl/domain/*/pki.py judges them)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path


def mode_of(path: Path) -> str | None:
    """The permission bits as four octal digits ("0600"), or None when the path cannot be read."""
    try:
        return f"{stat.S_IMODE(os.stat(path).st_mode):04o}"
    except OSError:
        return None


def bytes_of(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def modes_of(directory: Path, names: Iterable[str]) -> dict[str, str]:
    """The modes of the named files that exist in directory."""
    return {name: mode for name in names if (mode := mode_of(directory / name))}
