"""Every Ansible module of the roles and playbooks documents itself the way `ansible-doc` shows it:
DOCUMENTATION (and EXAMPLES, RETURN) are YAML, DOCUMENTATION has ansible-doc's shape, and its options
say what the module's argument_spec says - the same names, and for each option the same type, elements,
default, choices, required and suboptions. The argument_spec is the one main() really passes to
AnsibleModule: main() runs with AnsibleModule replaced by a recorder that stops it there (the modules
call main() only under `if __name__ == "__main__"`, so loading one runs nothing). A library file with
no AnsibleModule documents the same-named action plugin of its role: its options are the action's
_VALID_ARGS. Last, one `ansible-doc` run renders every module."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.pyimports import load_file

ROOT = Path(__file__).resolve().parents[3]
MODULES = sorted((*ROOT.glob("roles/*/library/*.py"), *ROOT.glob("playbooks/library/*.py")))
IDS = [str(p.relative_to(ROOT)) for p in MODULES]
ANSIBLE_DOC = Path(sys.executable).parent / "ansible-doc"
# What ansible-doc (and AnsibleModule) assume for a key an option leaves out.
OPTION_KEYS = (("type", "str"), ("elements", None), ("required", False), ("default", None), ("choices", None))


class _Called(Exception):
    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        super().__init__("AnsibleModule")
        self.spec = kwargs.get("argument_spec", args[0] if args else None)


def _constant(path: Path, name: str) -> str | None:
    """The string a module-level `NAME = "..."` assigns (read with ast: a broken module still parses)."""
    for node in ast.parse(path.read_text(), str(path)).body:
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value
    return None


def _yaml(path: Path, name: str) -> Any:
    text = _constant(path, name)
    try:
        return None if text is None else yaml.safe_load(text)
    except yaml.YAMLError as err:
        error = str(err)
    pytest.fail(f"{path.relative_to(ROOT)}: {name} is not valid YAML (ansible-doc cannot show it): {error}")


def _text(value: Any) -> bool:
    """A description as ansible-doc takes it: a string or a list of strings (an unquoted `a: b` in
    one is valid YAML but becomes a mapping)."""
    items = value if isinstance(value, list) else [value]
    return bool(value) and all(isinstance(item, str) and item.strip() for item in items)


def documentation(path: Path) -> dict[str, Any]:
    doc = _yaml(path, "DOCUMENTATION")
    assert isinstance(doc, dict), f"{path.relative_to(ROOT)}: DOCUMENTATION must be a YAML mapping"
    return doc


def argument_spec(path: Path) -> dict[str, Any] | None:
    """The argument_spec main() gives AnsibleModule; None for a file without AnsibleModule."""
    module = load_file(path, f"module_docs_{path.parent.parent.name}_{path.stem}")
    if not hasattr(module, "AnsibleModule"):
        return None

    def record(*args: Any, **kwargs: Any) -> None:
        raise _Called(args, kwargs)

    module.AnsibleModule = record  # type: ignore[attr-defined]
    with pytest.raises(_Called) as called:
        module.main()
    assert isinstance(called.value.spec, dict), f"{path.relative_to(ROOT)}: no argument_spec"
    return called.value.spec


def action_args(path: Path) -> frozenset[str]:
    """The arguments of the action plugin a documentation-only library file describes."""
    action = path.parent.parent / "action_plugins" / path.name
    assert action.is_file(), f"{path.relative_to(ROOT)}: no AnsibleModule and no action plugin {action.name}"
    plugin = load_file(action, f"module_docs_action_{path.parent.parent.name}_{path.stem}")
    valid = plugin.ActionModule._VALID_ARGS
    assert valid, f"{action.relative_to(ROOT)}: an action documented by name sets _VALID_ARGS"
    return frozenset(valid)


def _same(got: Any, want: Any) -> bool:
    return bool(got == want and isinstance(got, bool) == isinstance(want, bool))


def disagreements(doc: dict[str, Any], spec: dict[str, Any] | None, names: frozenset[str],
                  where: str = "") -> list[str]:
    """One line per way the documented options differ from the argument_spec (or, with spec None,
    from the action's argument names)."""
    wanted = set(spec) if spec is not None else set(names)
    problems = [f"{where}{n}: in the argument_spec, not documented" for n in sorted(wanted - set(doc))]
    problems += [f"{where}{n}: documented, not in the argument_spec" for n in sorted(set(doc) - wanted)]
    for name in sorted(wanted & set(doc)):
        option = doc[name]
        if not isinstance(option, dict):
            problems.append(f"{where}{name}: the documentation is not a mapping")
            continue
        if not _text(option.get("description")):
            problems.append(f"{where}{name}: description must be a string or a list of strings")
        if spec is None:
            continue
        for key, assumed in OPTION_KEYS:
            got, want = option.get(key, assumed), spec[name].get(key, assumed)
            if not _same(got, want):
                problems.append(f"{where}{name}: {key} documented {got!r}, argument_spec {want!r}")
        sub_doc, sub_spec = option.get("suboptions"), spec[name].get("options")
        if sub_doc is not None or sub_spec is not None:
            problems += disagreements(sub_doc or {}, sub_spec or {}, frozenset(), f"{where}{name}.")
    return problems


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_documentation_is_yaml_in_ansible_doc_shape(path: Path) -> None:
    doc = documentation(path)
    where = path.relative_to(ROOT)
    assert doc.get("module") == path.stem, f"{where}: module: must be {path.stem}"
    assert isinstance(doc.get("short_description"), str) and doc["short_description"].strip(), where
    assert _text(doc.get("description")), f"{where}: description must be a string or a list of strings"
    assert isinstance(doc.get("options", {}), dict), f"{where}: options must be a mapping"
    _yaml(path, "EXAMPLES")
    returned = _yaml(path, "RETURN") or {}
    assert isinstance(returned, dict), f"{where}: RETURN must be a YAML mapping"
    bad = [key for key, value in returned.items()
           if not (isinstance(value, dict) and _text(value.get("description")))]
    assert not bad, f"{where}: RETURN values without a string description: {bad}"


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_documented_options_match_the_argument_spec(path: Path) -> None:
    doc = documentation(path)
    spec = argument_spec(path)
    names = action_args(path) if spec is None else frozenset()
    problems = disagreements(doc.get("options") or {}, spec, names)
    assert not problems, f"{path.relative_to(ROOT)}:\n  " + "\n  ".join(problems)


def test_module_names_are_unique() -> None:
    """One ansible-doc run below, and Ansible's own module lookup, need each name once."""
    names = [p.stem for p in MODULES]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_ansible_doc_renders_every_module() -> None:
    folders = sorted({str(p.parent) for p in MODULES})
    env = {**os.environ, "ANSIBLE_MODULE_UTILS": str(ROOT / "roles" / "ufc_common" / "module_utils"),
           "NO_COLOR": "1"}
    command = [str(ANSIBLE_DOC), "--json", "-t", "module", "-M", os.pathsep.join(folders)]
    proc = subprocess.run([*command, *(p.stem for p in MODULES)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    # ansible-doc warns about module code it cannot name (e.g. `A, B = ...`), not about documentation
    assert proc.returncode == 0 and "[ERROR]" not in proc.stderr, proc.stderr[-4000:]
    shown = json.loads(proc.stdout)
    missing = [p.stem for p in MODULES if not (shown.get(p.stem) or {}).get("doc")]
    assert not missing, f"ansible-doc showed no documentation for {missing}"
