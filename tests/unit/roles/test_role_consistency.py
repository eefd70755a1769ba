"""Every role keeps the house rules: variables declared alike in three places, FQCN, named loop vars."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from ansible.playbook.handler import Handler
from ansible.playbook.task import Task

# Controller-side add-on roles share one scenario (SHARED); the roles the shared lab checks instead have
# none (LAB_TESTED): tests/integration/test_molecule.py holds both lists
from tests.integration.test_molecule import LAB_TESTED, SHARED

ROOT = Path(__file__).resolve().parents[3]
ROLES = sorted(p for p in (ROOT / "roles").iterdir() if (p / "tasks" / "main.yml").is_file())
ROLE_IDS = [role.name for role in ROLES]
TASK_KEYWORDS = set(Task.fattributes) | set(Handler.fattributes) | {"local_action"}
BLOCK_KEYS = ("block", "rescue", "always")
COMMAND_MODULES = {"ansible.builtin.command", "ansible.builtin.shell", "command", "shell"}
README_ROW = re.compile(r"^\|\s*`([A-Za-z0-9_]+)`\s*\|")


def _yaml(path: Path):
    return yaml.safe_load(path.read_text()) if path.is_file() else None


def _defaults(role: Path) -> list[str]:
    return list((_yaml(role / "defaults" / "main.yml") or {}).keys())


def _spec_options(role: Path) -> dict:
    specs = _yaml(role / "meta" / "argument_specs.yml") or {}
    return specs.get("argument_specs", {}).get("main", {}).get("options", {}) or {}


def _readme_variables(role: Path) -> list[str]:
    """First-column names of the README table whose header starts with `| Variable |`."""
    lines = (role / "README.md").read_text().splitlines() if (role / "README.md").is_file() else []
    starts = [i for i, line in enumerate(lines) if re.match(r"^\|\s*Variable\s*\|", line)]
    if not starts:
        return []
    names = []
    for line in lines[starts[0] + 2 :]:
        if not line.startswith("|"):
            break
        match = README_ROW.match(line)
        if match:
            names.append(match.group(1))
    return names


def _tasks(items, origin: str) -> Iterator[tuple[str, dict]]:
    """Every task in a task list, descending into blocks; yields (file:name, task)."""
    for item in items or []:
        if not isinstance(item, dict):
            continue
        if any(key in item for key in BLOCK_KEYS):
            for key in BLOCK_KEYS:
                yield from _tasks(item.get(key), origin)
            continue
        yield f"{origin}: {item.get('name', '<unnamed>')}", item


def _role_tasks(role: Path) -> list[tuple[str, dict]]:
    found = []
    for folder in ("tasks", "handlers"):
        for path in sorted((role / folder).glob("*.yml")):
            found += list(_tasks(_yaml(path), f"{role.name}/{folder}/{path.name}"))
    return found


def _dependencies(role: Path) -> list[Path]:
    """Roles listed in meta/main.yml `dependencies:` (their library/ modules are the role's too)."""
    meta = yaml.safe_load((role / "meta" / "main.yml").read_text()) or {}
    names = [d["role"] if isinstance(d, dict) else d for d in meta.get("dependencies") or []]
    return [ROOT / "roles" / name for name in names]


def _action(task: dict) -> str:
    keys = [key for key in task if key not in TASK_KEYWORDS and not key.startswith("with_")]
    assert len(keys) == 1, f"cannot tell the module of task {task.get('name')!r}: {keys}"
    return keys[0]


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_defaults_argument_specs_and_readme_list_the_same_variables(role):
    defaults = _defaults(role)
    assert defaults, f"{role.name}: defaults/main.yml declares no variables"
    assert sorted(_spec_options(role)) == sorted(defaults), f"{role.name}: argument_specs main options"
    assert _readme_variables(role) == defaults, f"{role.name}: README variables table (order of defaults)"


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_argument_spec_defaults_match_role_defaults(role):
    values = _yaml(role / "defaults" / "main.yml") or {}
    for name, option in _spec_options(role).items():
        if "default" in option:
            assert option["default"] == values.get(name), f"{role.name}: {name}: spec default differs"


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_user_variables_carry_the_role_prefix(role):
    wrong = [name for name in _defaults(role) if not name.startswith(f"{role.name}_")]
    assert wrong == [], f"{role.name}: defaults without the `{role.name}_` prefix"


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_registered_and_set_facts_do_not_clash_with_user_variables(role):
    # Internal results are `__<role>_*`; a fact exported for another role may be `<role>_*` but
    # must not reuse a user variable's name (set_fact would silently override the inventory).
    user_variables = set(_defaults(role))
    wrong = []
    for where, task in _role_tasks(role):
        names = [task["register"]] if "register" in task else []
        action = _action(task)
        if action in ("ansible.builtin.set_fact", "set_fact") and isinstance(task[action], dict):
            names += [k for k in task[action] if k != "cacheable"]
        internal = f"__{role.name}_"
        exported = f"{role.name}_"
        wrong += [
            f"{where}: {n}"
            for n in names
            if not (n.startswith(internal) or (n.startswith(exported) and n not in user_variables))
        ]
    assert wrong == [], f"use __{role.name}_* for internal names (or {role.name}_* for an exported fact)"


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_role_has_a_molecule_scenario(role):
    if role.name in LAB_TESTED:  # the shared lab deploys it and checks what its scenario did
        assert (ROOT / LAB_TESTED[role.name]).is_file(), LAB_TESTED[role.name]
        return
    scenario = ROOT / "molecule" / SHARED.get(role.name, role.name) / "molecule.yml"
    assert scenario.is_file(), f"{scenario.relative_to(ROOT)} missing"


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_command_and_shell_tasks_state_changed_when_or_creates(role):
    wrong = []
    for where, task in _role_tasks(role):
        action = _action(task)
        if action not in COMMAND_MODULES:
            continue
        args = task[action] if isinstance(task[action], dict) else {}
        if "changed_when" not in task and "creates" not in args and "creates" not in task.get("args", {}):
            wrong.append(where)
    assert wrong == []


def _dependencies(role: Path) -> list[Path]:
    """The roles meta/main.yml lists under dependencies (their library/ serves this role too)."""
    meta = _yaml(role / "meta" / "main.yml") or {}
    names = [d["role"] if isinstance(d, dict) else d for d in meta.get("dependencies") or []]
    return [ROOT / "roles" / str(name) for name in names]


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_modules_are_fully_qualified(role):
    local = {path.stem for r in (role, *_dependencies(role)) for path in (r / "library").glob("*.py")}
    wrong = [
        f"{where}: {_action(task)}"
        for where, task in _role_tasks(role)
        if _action(task).count(".") < 2 and _action(task) not in local
    ]
    assert wrong == [], "use ansible.builtin.* (or a module in the library/ of the role or of a dependency)"


@pytest.mark.parametrize("role", ROLES, ids=ROLE_IDS)
def test_loops_name_their_loop_var(role):
    wrong = [
        where
        for where, task in _role_tasks(role)
        if ("loop" in task or any(key.startswith("with_") for key in task))
        and not (task.get("loop_control") or {}).get("loop_var")
    ]
    assert wrong == [], "loop_control.loop_var must be set (nested includes otherwise clash on `item`)"


def test_the_checks_see_every_task_file():
    # Guard against the walker silently finding nothing (a renamed folder, a parse change).
    assert ROLES, "no roles found"
    for role in ROLES:
        assert _role_tasks(role), f"{role.name}: no tasks found"
