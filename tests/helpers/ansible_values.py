"""Inventory and role-default values handed to Ansible's Templar in render tests.

ansible-core 2.19 renders only strings marked trusted; values read from files we own (role defaults,
generated inventories) are trusted, so their embedded templates are marked before rendering."""

from __future__ import annotations

from typing import Any

from ansible.template import trust_as_template


def trusted(value: Any) -> Any:
    """`value` with every string that holds a template marked trusted, recursively."""
    if isinstance(value, str) and "{{" in value:
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [trusted(v) for v in value]
    return value
