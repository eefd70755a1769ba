"""Root shell in the roles never interpolates a value unquoted.

Every `{{ ... }}` in the command text of a shell, command or raw task (roles and playbooks) and of
a shell script template must be `| quote`d, a number (`| int`), a list quoted element by element
(`| map('quote') | join(' ')`), or a bare internal `__<role>_*` variable holding more shell text,
which is scanned the same way. `argv` lists are not scanned: each element is one argument and no
shell reads it. EXCEPTIONS lists what remains, each with the reason it is safe.

roles/ascend_driver runs its installers from a module (library/ufc_ascend_driver.py) without a
shell: the last tests here check that odd values reach the installer as single argv words.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2.nodes as nodes
import pytest

from tests.helpers.pyimports import load_file
from tests.helpers.role_tasks import ROLES, ROOT, TaskRef, all_tasks, expressions, role_vars
from ufcctl.domain.npu import driver_plan

SHELL_MODULES = {"ansible.builtin.shell", "ansible.builtin.raw", "ansible.builtin.command"}
SCRIPT_TEMPLATES = sorted(p for role in ROLES for p in (role / "templates").rglob("*.sh.j2"))

# (where, expression) -> why it is safe unquoted.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("apiserver_lb/templates/ufcctl-check-apiserver.sh.j2", "ansible_managed"): (
        "in a comment line; the text is ansible.cfg's ansible_managed (Ansible's default), not a "
        "value from the inventory or a flag"
    ),
}


def _safe(expr: nodes.Expr) -> bool:
    if isinstance(expr, nodes.Filter) and expr.name in ("quote", "int"):
        return True
    return (
        isinstance(expr, nodes.Filter)
        and expr.name == "join"
        and isinstance(expr.node, nodes.Filter)
        and expr.node.name == "map"
        and bool(expr.node.args)
        and isinstance(expr.node.args[0], nodes.Const)
        and expr.node.args[0].value == "quote"
    )


def unquoted(text: str, where: str, snippets: Mapping[str, Any], seen: tuple[str, ...] = ()) -> list[str]:
    """`where: expression` for every interpolation of `text` that is neither safe nor a safe snippet."""
    found = []
    for source, expr in expressions(text):
        if _safe(expr):
            continue
        if isinstance(expr, nodes.Name) and expr.name.startswith("__") and expr.name not in seen:
            definition = snippets.get(expr.name)
            if isinstance(definition, str):
                found += unquoted(definition, f"{where} -> {expr.name}", snippets, (*seen, expr.name))
                continue
        found.append(f"{where}: {{{{ {source} }}}}")
    return found


def shell_text(task: TaskRef) -> str | None:
    """The text a shell (or the command module's splitting) reads; None for argv and other modules."""
    if task.action not in SHELL_MODULES:
        return None
    args = task.args
    if isinstance(args, str):
        return args
    return args.get("cmd") if isinstance(args.get("cmd"), str) else None


def _role_vars_of(task: TaskRef) -> dict[str, Any]:
    return role_vars(task.role) if task.role else {}


def findings() -> list[tuple[str, str]]:
    """(where, expression) of every unquoted interpolation in the roles and playbooks."""
    found = []
    for task in all_tasks():
        text = shell_text(task)
        if text is None:
            continue
        found += unquoted(text, task.where, {**_role_vars_of(task), **task.vars})
    for path in SCRIPT_TEMPLATES:
        where = path.relative_to(ROOT / "roles")
        found += unquoted(path.read_text(), str(where), role_vars(ROOT / "roles" / where.parts[0]))
    return [_split(f) for f in found]


def _split(finding: str) -> tuple[str, str]:
    where, _, expression = finding.rpartition(": {{ ")
    return where, expression.removesuffix(" }}")


def test_shell_commands_quote_every_interpolated_value() -> None:
    wrong = [f"{where}: {{{{ {expr} }}}}" for where, expr in findings() if (where, expr) not in EXCEPTIONS]
    assert wrong == [], "pipe these through `quote` (or `int`), or list them in EXCEPTIONS with the reason"


def test_every_exception_is_still_needed() -> None:
    assert set(EXCEPTIONS) <= set(findings()), "remove exceptions the scan no longer finds"


def test_the_scan_reads_root_shell_of_the_roles() -> None:
    # a guard against scanning nothing: etcd's member commands are shell tasks
    texts = [shell_text(t) for t in all_tasks() if t.where.startswith("etcd/tasks/members.yml")]
    assert [t for t in texts if t and "{{" in t], "no etcd shell task found to scan"
    assert SCRIPT_TEMPLATES, "no shell script templates found"


def test_the_driver_role_runs_no_shell() -> None:
    """Its installers get argv lists from the module; a shell task there would escape the tests below."""
    driver = [t for t in all_tasks() if t.where.startswith("ascend_driver/")]
    shell = [t.where for t in driver if t.action in SHELL_MODULES]
    assert shell == []


FAKE_INSTALLER = """#!/bin/sh
for arg in "$@"; do printf '%s\\n' "$arg"; done > "$(dirname "$0")/args"
"""


@pytest.mark.skipif(not shutil.which("timeout"), reason="needs coreutils timeout")
def test_the_driver_module_passes_odd_values_as_single_words(tmp_path: Path) -> None:
    """A space, `;` or `$(...)` in a user, group or path stays inside its argument: no shell reads them."""
    module = load_file(ROOT / "roles" / "ascend_driver" / "library" / "ufc_ascend_driver.py", "ufc_driver_q")
    download = tmp_path / "cache dir; touch pwned"
    download.mkdir()
    installer = download / "Ascend-hdk-910b-npu-driver_24.1.rc3_linux-x86_64.run"
    installer.write_text(FAKE_INSTALLER)
    installer.chmod(0o700)
    user, group = "Hw User; touch pwned", "$(touch pwned)"
    [(_, _, flags)] = driver_plan.plan("", "", "24.1.rc3", "", False, False, user, group)

    class Params:
        params = {"install_timeout": 60}
        check_mode = False

    fd = module.lock(str(tmp_path / "lock file"), 5)
    try:
        rc, _ = module.Node(Params()).install("driver", str(installer), flags, fd)
    finally:
        os.close(fd)
    assert rc == 0
    assert (download / "args").read_text().splitlines() == [
        "--nox11", "--full", "--install-for-all", "--install-username=Hw User; touch pwned",
        "--install-usergroup=$(touch pwned)", "--quiet",
    ]
    assert not list(tmp_path.rglob("pwned"))
    assert not (ROOT / "pwned").exists()


@pytest.mark.parametrize(
    ("text", "snippets", "flagged"),
    [
        ("echo {{ ascend_driver_version }}", {}, ["{{ ascend_driver_version }}"]),
        ("echo {{ ascend_driver_version | quote }}", {}, []),
        ("sleep {{ ascend_driver_install_timeout | int }}", {}, []),
        ("x {{ flags | map('quote') | join(' ') }}", {}, []),
        ("x {{ flags | join(' ') }}", {}, ["{{ flags | join(' ') }}"]),
        ('echo "{{ user_path }}"', {}, ['{{ user_path }}']),
        ("{{ __snippet }}", {"__snippet": "rm {{ target }}"}, ["{{ target }}"]),
        ("{{ __snippet }}", {"__snippet": "rm {{ target | quote }}"}, []),
        ("{{ __list }}", {"__list": ["a", "b"]}, ["{{ __list }}"]),
        ("{{ __loop }}", {"__loop": "{{ __loop }}"}, ["{{ __loop }}"]),
        ("{{ (a ~ '/' ~ b) | quote }}", {}, []),
        ("{{ a | quote | trim }}", {}, ["{{ a | quote | trim }}"]),
    ],
    ids=["bare-user-var", "quoted", "int", "list-quoted", "list-unquoted", "inside-double-quotes",
         "snippet-unquoted", "snippet-quoted", "snippet-not-text", "snippet-cycle", "concat-quoted",
         "quote-not-last"],
)
def test_the_scanner_flags_exactly_the_unquoted_values(
    text: str, snippets: dict[str, Any], flagged: list[str]
) -> None:
    found = unquoted(text, "t", snippets)
    assert [f.split(": ", 1)[1] for f in found] == flagged


def test_script_templates_are_found_under_roles() -> None:
    assert all(isinstance(p, Path) and p.is_file() for p in SCRIPT_TEMPLATES)
