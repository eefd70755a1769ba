"""A role's template rendered as roles/ufc_common's `ufc_files` renders a `template:` entry: the role's
`templates/` with the entry's `vars`, Ansible's template settings (trim_blocks, the trailing newline
kept), undefined names refused, Ansible's core filters (dirname, ...) and the filters of the role's own
`filter_plugins/`."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from tests.helpers.pyimports import load_file

ROLES = Path(__file__).resolve().parents[2] / "roles"


@cache
def _filters(role: str) -> dict[str, Any]:
    from ansible.plugins.filter.core import FilterModule as Core  # imported when a template needs it

    found: dict[str, Any] = dict(Core().filters())
    for path in sorted((ROLES / role / "filter_plugins").glob("*.py")):
        found.update(load_file(path, f"{role}_{path.stem}_for_templates").FilterModule().filters())
    return found


def render(role: str, template: str, variables: Mapping[str, Any]) -> str:
    env = jinja2.Environment(trim_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters.update(_filters(role))
    return env.from_string((ROLES / role / "templates" / template).read_text()).render(dict(variables))


def render_entry(role: str, entry: Mapping[str, Any]) -> str:
    """A ufc_files entry's file: its template with its vars, or its content as given."""
    if "template" in entry:
        return render(role, str(entry["template"]), entry.get("vars") or {})
    return str(entry["content"])
