"""Static reading of the roles and playbooks for tests: every task with what its blocks give it,
the module it calls, role variables by name, and the Jinja expressions inside any string."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import jinja2.nodes
import yaml
from ansible.playbook.handler import Handler
from ansible.playbook.task import Task

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(p for p in (ROOT / "roles").iterdir() if (p / "tasks" / "main.yml").is_file())
PLAYBOOKS = sorted((ROOT / "playbooks").glob("*.yml"))
TASK_KEYWORDS = set(Task.fattributes) | set(Handler.fattributes) | {"local_action"}
BLOCK_KEYS = ("block", "rescue", "always")
# Keywords whose value Ansible evaluates as a bare Jinja expression (no braces).
CONDITIONALS = ("when", "changed_when", "failed_when", "until")
EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.S)


class _AnyName(dict):  # type: ignore[type-arg]
    """Every filter and test name exists: Ansible's and the roles' plugins need not be loaded to parse."""

    def __contains__(self, key: object) -> bool:
        return True

    def __missing__(self, key: str) -> Any:
        return _ignore

    def get(self, key: str, default: Any = None) -> Any:
        return self[key]


def _ignore(*args: Any, **kwargs: Any) -> None:
    return None


_ENV = jinja2.Environment()
_ENV.filters = _AnyName(_ENV.filters)
_ENV.tests = _AnyName(_ENV.tests)


@dataclass(frozen=True)
class TaskRef:
    where: str  # "role/tasks/file.yml: task name"
    path: Path
    task: dict[str, Any]
    block_vars: Mapping[str, Any] = field(default_factory=dict)
    block_no_log: bool = False
    role: Path | None = None

    @property
    def no_log(self) -> bool:
        value = self.task.get("no_log", self.block_no_log)
        return value is True or str(value).lower() == "true"

    @property
    def action(self) -> str:
        keys = [k for k in self.task if k not in TASK_KEYWORDS and not k.startswith("with_")]
        assert len(keys) == 1, f"{self.where}: cannot tell the module: {keys}"
        return keys[0]

    @property
    def args(self) -> Any:
        """The module's arguments (a dict, or the free-form string), with `args:` merged in."""
        value = self.task[self.action]
        if isinstance(value, dict):
            return {**value, **(self.task.get("args") or {})}
        return value

    @property
    def vars(self) -> dict[str, Any]:
        return {**self.block_vars, **(self.task.get("vars") or {})}


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text()) if path.is_file() else None


def _walk(items: Any, path: Path, label: str, role: Path | None, block_vars: Mapping[str, Any],
          no_log: bool) -> Iterator[TaskRef]:
    for item in items or []:
        if not isinstance(item, dict):
            continue
        if any(key in item for key in BLOCK_KEYS):
            inner_vars = {**block_vars, **(item.get("vars") or {})}
            inner_no_log = item.get("no_log", no_log) in (True, "true", "True")
            for key in BLOCK_KEYS:
                yield from _walk(item.get(key), path, label, role, inner_vars, inner_no_log)
            continue
        if "hosts" in item and "tasks" not in item and "roles" in item:
            continue  # a play that only applies roles
        if "hosts" in item:  # a play: its tasks
            for key in ("pre_tasks", "tasks", "post_tasks", "handlers"):
                yield from _walk(item.get(key), path, label, role, item.get("vars") or {}, False)
            continue
        yield TaskRef(f"{label}: {item.get('name', '<unnamed>')}", path, item, block_vars, no_log, role)


def role_tasks(role: Path) -> list[TaskRef]:
    found = []
    for folder in ("tasks", "handlers"):
        for path in sorted((role / folder).glob("*.yml")):
            found += _walk(load_yaml(path), path, f"{role.name}/{folder}/{path.name}", role, {}, False)
    return found


def playbook_tasks() -> list[TaskRef]:
    found = []
    for path in PLAYBOOKS:
        found += _walk(load_yaml(path), path, f"playbooks/{path.name}", None, {}, False)
    return found


def all_tasks() -> list[TaskRef]:
    return [t for role in ROLES for t in role_tasks(role)] + playbook_tasks()


def _var_files(role: Path, folder: str) -> list[Path]:
    main = role / folder / "main.yml"
    return [main] if main.is_file() else sorted((role / folder / "main").glob("*.yml"))


def role_vars(role: Path) -> dict[str, Any]:
    """vars/main.yml, or every file of vars/main/ (Ansible merges them in name order)."""
    merged: dict[str, Any] = {}
    for path in _var_files(role, "vars"):
        merged.update(load_yaml(path) or {})
    return merged


def role_defaults(role: Path) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path in _var_files(role, "defaults"):
        merged.update(load_yaml(path) or {})
    return merged


def strings(value: Any) -> Iterator[str]:
    """Every string inside a YAML value (keys too: set_fact keys are not templated, but harmless)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from strings(v)


@functools.cache
def _names(source: str) -> frozenset[str]:
    return frozenset(jinja2.meta.find_undeclared_variables(_ENV.parse(source)))


def names_in(text: str, bare: bool = False) -> set[str]:
    """Top-level variable names a template string (or, with `bare`, an expression) reads."""
    source = "{{ " + text + " }}" if bare else text
    if not bare and "{{" not in text and "{%" not in text:
        return set()
    try:
        return set(_names(source))
    except jinja2.TemplateSyntaxError as err:
        raise AssertionError(f"cannot parse {text!r}: {err}") from err


def names_in_value(value: Any) -> set[str]:
    return set().union(*(names_in(s) for s in strings(value)))


def expressions(text: str) -> list[tuple[str, jinja2.nodes.Expr]]:
    """Each `{{ ... }}` of a template string: its source and its parsed expression."""
    found = []
    for match in EXPRESSION.finditer(text):
        source = match.group(1).strip()
        output = _ENV.parse("{{ " + source + " }}").find(jinja2.nodes.Output)
        assert output is not None and len(output.nodes) == 1, source
        found.append((source, output.nodes[0]))
    return found


def template_names(path: Path) -> set[str]:
    return names_in(path.read_text())

