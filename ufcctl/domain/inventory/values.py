"""Ansible's tagged YAML values (`!unsafe`, `!vault`) and their JSON form, kept intact through ufcctl."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def templated(value: Any) -> bool:
    """A string that is still a Jinja template: Ansible renders it, the domain never does."""
    return isinstance(value, str) and "{{" in value


def literal(value: Any) -> Any:
    """The value as written, or None while it is a template (it cannot be resolved here: unset)."""
    return None if templated(value) else value


class UnsafeText(str):
    """A string written with `!unsafe`: Ansible never templates it, so ufcctl must keep the mark.

    It compares and hashes like the plain string; `to_ansible_json` turns it back into the
    `{"__ansible_unsafe": ...}` form that Ansible's JSON loader (and `ansible-inventory --list`) uses.
    """

    __slots__ = ()


@dataclass(frozen=True)
class VaultedValue:
    """An inline `!vault` value. ufcctl never decrypts it; it is handed to Ansible as it was written."""

    ciphertext: str

    def __str__(self) -> str:  # never print the ciphertext by accident in a table
        return "<vaulted>"


def to_ansible_json(value: Any) -> Any:
    """`value` in the JSON form Ansible reads back losslessly (the form `ansible-inventory --list` prints).

    Dates become ISO strings (as Ansible prints them), `!unsafe` and `!vault` values become the
    `__ansible_unsafe` / `__ansible_vault` objects Ansible's JSON decoder understands.
    """
    if isinstance(value, UnsafeText):
        return {"__ansible_unsafe": str(value)}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {_json_key(k): to_ansible_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_ansible_json(v) for v in value]
    if isinstance(value, VaultedValue):
        return {"__ansible_vault": value.ciphertext}
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (set, frozenset)):
        return [to_ansible_json(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _json_key(key: Any) -> str:
    # json.dumps turns int/float/bool/None keys into strings the same way; do it up front so
    # results compare equal to what Ansible printed.
    if isinstance(key, str):
        return str(key)
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def plain(value: Any) -> Any:
    """Ansible 2.19 hands filters tagged str/int/float/dict/list subclasses that yaml.safe_dump refuses:
    the same value rebuilt from the plain built-in types (the roles' filter plugins use it)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
