"""Version strings that become package names, URLs and arguments of root commands on the nodes."""

from __future__ import annotations

import re

# Letters, digits, dots, underscores and dashes, starting with a letter or digit: every HDK driver
# and firmware version (24.1.rc3, 7.5.0.2.220) fits, while a shell word separator, quote, `$`,
# `/` (a path out of the package directory) or a leading `-` (an option) cannot appear.
# roles/ascend_driver checks the same pattern in its validate step (a generated copy, see
# ufcctl/app/role_vars.py); Python's re and Ansible's `regex` test read it alike.
VERSION_PATTERN = r"^[0-9A-Za-z][0-9A-Za-z._-]*$"
_VERSION = re.compile(VERSION_PATTERN)


def version_problem(value: str) -> str | None:
    """Why `value` is not an acceptable version string, or None when it is."""
    if _VERSION.fullmatch(value):
        return None
    return (
        f"{value!r} is not a version: use letters, digits, '.', '_' and '-', starting with a letter or digit"
    )
