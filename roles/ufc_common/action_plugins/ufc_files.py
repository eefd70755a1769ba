"""Action `ufc_files`: render several templates on the controller, write them on the node in one call.

One module run per host replaces a loop of `template`/`copy`/`file` tasks (one SSH round trip and
one module run each). The templates are rendered exactly as `ansible.builtin.template` renders
them (same templar call, same `ansible_managed`, trim_blocks), so a role that moves to this action
finds its files unchanged. Contents of files marked `secret` never appear in the result, the diff
or the invocation, with or without the task's no_log.
"""

from __future__ import annotations

import base64
import os
import re
import tomllib
from collections.abc import Mapping
from typing import Any

import jinja2
from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from jinja2 import meta

from ufcctl.domain.inventory.config_values import RULES_BY_VAR
from ufcctl.errors import shown

try:  # ansible-core 2.19+: data read from files must be trusted before it is templated
    from ansible._internal._templating._template_vars import generate_ansible_template_vars
    from ansible.template import trust_as_template

    _TEMPLATE_2_19 = True
except ImportError:  # ansible-core 2.17 / 2.18
    from ansible.template import generate_ansible_template_vars  # type: ignore[attr-defined,no-redef]

    _TEMPLATE_2_19 = False

    def trust_as_template(value: str) -> str:  # type: ignore[misc]
        return value


FILE_KEYS = frozenset(
    ("dest", "template", "content", "src", "vars", "mode", "owner", "group", "validate", "format", "secret")
)
DIRECTORY_KEYS = frozenset(("path", "mode", "owner", "group"))
SOURCES = ("template", "content", "src")
MODULE = "ansible.legacy.ufc_files"
# what ansible.builtin.template passes by default (plugins/action/template.py)
TEMPLATE_OVERRIDES = {"trim_blocks": True, "lstrip_blocks": False, "newline_sequence": "\n"}


class BadEntry(Exception):
    """An entry of the task's arguments that cannot be used (the message names it)."""


# A line break or other control character in a value a template prints would start a line of its own in a
# file a daemon reads line by line (keepalived.conf, haproxy.cfg, a systemd unit or EnvironmentFile): tab
# is the only control character a configured value may hold.
_LINE_BREAKING = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")


class _AnyName(dict):  # type: ignore[type-arg]
    """Every filter or test name is known: the template is only parsed for the names it reads."""

    def get(self, key: Any, default: Any = None) -> Any:
        return super().get(key) or _any_filter


def _any_filter(*args: Any, **kwargs: Any) -> None:
    return None


def template_names(text: str) -> set[str]:
    """The variables a template reads from outside itself (not its own set/for/macro names)."""
    env = jinja2.Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])
    env.filters, env.tests = _AnyName(env.filters), _AnyName(env.tests)
    return set(meta.find_undeclared_variables(env.parse(text)))


def line_breaking(value: Any) -> Any:
    """The first text of `value` (a text, or a list or mapping of texts one level down) that holds a line
    break or control character, or None."""
    if isinstance(value, str):
        return value if _LINE_BREAKING.search(value) else None
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, list | tuple) else ()
    return next((item for item in items if isinstance(item, str) and _LINE_BREAKING.search(item)), None)


def _toml_problem(text: str) -> str:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        return f"not valid TOML: {err}"
    return ""


# `format`: the rendered text is parsed here, on the controller, before anything is sent (check mode
# too). Where `validate` would need a parser on the node: containerd's TOML files have no checking
# command of their own, and a node's python3 may have no tomllib (Ubuntu 22.04's 3.10).
FORMATS = {"toml": _toml_problem}


def _entry(kind: str, index: int, value: Any, allowed: frozenset[str], key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise BadEntry(f"{kind}[{index}]: expected a mapping, got {type(value).__name__}")
    where = f"{kind}[{index}] ({value.get(key, '?')})"
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise BadEntry(
            f"{where}: unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(allowed))})"
        )
    for required in (key, "mode"):
        if value.get(required) in (None, ""):
            raise BadEntry(f"{where}: {required} is required")
    return value


def _common(entry: Mapping[str, Any]) -> dict[str, Any]:
    """owner/group/mode as the module takes them: strings, unset ones left out."""
    out: dict[str, Any] = {
        "mode": str(entry["mode"]) if not isinstance(entry["mode"], int) else entry["mode"]
    }
    for key in ("owner", "group"):
        if entry.get(key) not in (None, ""):
            out[key] = str(entry[key])
    return out


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _VALID_ARGS = frozenset(("files", "directories"))

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        try:
            self._check_values(task_vars)
            directories = self._directories(self._task.args.get("directories") or [])
            files, after, secret = self._files(self._task.args.get("files") or [], task_vars)
        except (BadEntry, AnsibleError) as err:
            return {**result, "failed": True, "msg": f"ufc_files: {err}"}
        module_result = self._execute_module(
            module_name=MODULE,
            module_args={"directories": directories, "files": files},
            task_vars=task_vars,
        )
        module_result.pop("invocation", None)  # holds the contents: replaced by a summary below
        module_result["invocation"] = {
            "module_args": {
                "directories": [d["path"] for d in directories],
                "files": [f["dest"] for f in files],
            }
        }
        if self._task.diff and not module_result.get("failed"):
            module_result["diff"] = self._diff(module_result, after, secret)
        for entry in module_result.get("files") or []:
            entry.pop("before", None)  # a diff-only field, not part of what a role registers
        return {**result, **module_result}

    def _check_values(self, task_vars: dict[str, Any]) -> None:
        """The inventory values that become lines of root-run configuration (an interface name, a path,
        a label value: ufcctl/domain/inventory/config_values.py), checked as `ufcctl inventory check`
        checks them, so a template never emits a raw newline or separator from one, also when the role
        runs with plain ansible-playbook."""
        for var, rule in RULES_BY_VAR.items():
            if var not in task_vars:
                continue
            try:
                value = self._templar.template(task_vars[var])
            except AnsibleError:
                continue  # undefined here: a template that uses it fails on its own
            why = rule(value)
            if why:
                raise BadEntry(f"{var} {shown(value)} {why}: no file was rendered")

    def _check_printed(
        self, name: str, text: str, task_vars: dict[str, Any], extra: Mapping[str, Any]
    ) -> None:
        """Every variable an operator sets (no `__` role fact, no `vars` of the entry) that the template reads
        is refused when it would print a line break or control character: a template never emits a raw
        newline from a value, whichever variable it is."""
        for var in sorted(template_names(text)):
            if var.startswith("_") or var in extra or var not in task_vars:
                continue
            raw = task_vars[var]
            if not isinstance(raw, (str, list, tuple)):
                continue  # a mapping such as groups: its texts are names Ansible checked
            try:
                value = self._templar.template(raw)
            except AnsibleError:
                continue  # undefined here: the template fails on its own
            bad = line_breaking(value)
            if bad is not None:
                raise BadEntry(f"template {name}: {var} {shown(bad)} holds a line break or control "
                               "character: no file was rendered")

    def _directories(self, entries: Any) -> list[dict[str, Any]]:
        if not isinstance(entries, list):
            raise BadEntry("directories must be a list")
        out = []
        for i, value in enumerate(entries):
            entry = _entry("directories", i, value, DIRECTORY_KEYS, "path")
            out.append({"path": str(entry["path"]), **_common(entry)})
        return out

    def _files(
        self, entries: Any, task_vars: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], dict[str, str], set[str]]:
        """Module arguments per file, plus each text file's new text (for --diff) and the secret dests."""
        if not isinstance(entries, list):
            raise BadEntry("files must be a list")
        out, after, secret = [], {}, set()
        for i, value in enumerate(entries):
            entry = _entry("files", i, value, FILE_KEYS, "dest")
            dest = str(entry["dest"])
            where = f"files[{i}] ({dest})"
            given = [key for key in SOURCES if entry.get(key) is not None]
            if len(given) != 1:
                raise BadEntry(
                    f"{where}: give exactly one of {', '.join(SOURCES)} (got {', '.join(given) or 'none'})"
                )
            if entry.get("vars") is not None and given != ["template"]:
                raise BadEntry(f"{where}: vars applies to template only")
            data = self._content(given[0], entry, dest, task_vars, where)
            if entry.get("format") is not None:
                check = FORMATS.get(str(entry["format"]))
                if check is None:
                    known = ", ".join(FORMATS)
                    raise BadEntry(f"{where}: format {entry['format']!r} unknown (known: {known})")
                problem = check(data.decode("utf-8", errors="replace"))
                if problem:
                    raise BadEntry(f"{where}: {problem}")
            module_entry = {"dest": dest, "content": base64.b64encode(data).decode("ascii"), **_common(entry)}
            if entry.get("validate"):
                module_entry["validate"] = str(entry["validate"])
            if entry.get("secret"):
                module_entry["secret"] = True
                secret.add(dest)
            else:
                try:
                    after[dest] = data.decode("utf-8")
                except UnicodeDecodeError:
                    pass
            out.append(module_entry)
        return out, after, secret

    def _content(
        self, source: str, entry: Mapping[str, Any], dest: str, task_vars: dict[str, Any], where: str
    ) -> bytes:
        if source == "content":
            return str(entry["content"]).encode("utf-8")
        if source == "src":
            path = self._find_needle("files", str(entry["src"]))
            with open(path, "rb") as handle:
                return handle.read()
        extra = entry.get("vars") or {}
        if not isinstance(extra, Mapping):
            raise BadEntry(f"{where}: vars must be a mapping")
        return self._render(str(entry["template"]), dest, task_vars, dict(extra)).encode("utf-8")

    def _render(self, name: str, dest: str, task_vars: dict[str, Any], extra: dict[str, Any]) -> str:
        """`name` rendered as ansible.builtin.template renders it (plugins/action/template.py)."""
        source = self._find_needle("templates", name)
        searchpath = [
            *task_vars.get("ansible_search_path", []),
            self._loader._basedir,
            os.path.dirname(source),
        ]
        searchpath = [p for base in searchpath for p in (os.path.join(base, "templates"), base)]
        variables = dict(task_vars)
        if _TEMPLATE_2_19:
            variables.update(
                generate_ansible_template_vars(
                    path=name,
                    fullpath=source,
                    dest_path=dest,
                    include_ansible_managed="ansible_managed" not in variables,
                )
            )
        else:
            variables.update(generate_ansible_template_vars(name, fullpath=source, dest_path=dest))
        variables.update(extra)
        raw = self._loader.get_text_file_contents(source)
        self._check_printed(name, raw, task_vars, extra)
        text = trust_as_template(raw)
        templar = self._templar.copy_with_new_env(searchpath=searchpath, available_variables=variables)
        if _TEMPLATE_2_19:
            rendered = templar.template(text, escape_backslashes=False, overrides=TEMPLATE_OVERRIDES)
        else:
            rendered = templar.do_template(
                text, preserve_trailing_newlines=True, escape_backslashes=False, overrides=TEMPLATE_OVERRIDES
            )
        return "" if rendered is None else str(rendered)

    @staticmethod
    def _diff(
        module_result: Mapping[str, Any], after: Mapping[str, str], secret: set[str]
    ) -> list[dict[str, Any]]:
        diffs: list[dict[str, Any]] = []
        for entry in module_result.get("directories") or []:
            if entry.get("created"):
                diffs.append(
                    {
                        "before": {"path": entry["path"], "state": "absent"},
                        "after": {"path": entry["path"], "state": "directory"},
                    }
                )
            elif entry.get("changed"):
                diffs.append({"prepared": f"{entry['path']}: owner, group or mode corrected"})
        for entry in module_result.get("files") or []:
            dest = entry["dest"]
            if not entry.get("changed"):
                continue
            if entry.get("content") and dest in secret:
                diffs.append({"prepared": f"{dest}: content changed (not shown: secret)"})
            elif entry.get("content") and dest in after and ("before" in entry or entry.get("created")):
                diffs.append(
                    {
                        "before_header": dest,
                        "after_header": dest,
                        "before": entry.get("before", ""),
                        "after": after[dest],
                    }
                )
            elif entry.get("content"):
                diffs.append({"prepared": f"{dest}: content changed (binary or large: not shown)"})
            if entry.get("attributes"):
                diffs.append({"prepared": f"{dest}: owner, group or mode corrected"})
        return diffs
