"""Read an Ansible YAML inventory directory from disk: inventory files, group_vars/ and host_vars/.

Which files count follows ansible-core 2.19: inventory files are every entry of the directory in
sorted order (recursing into subdirectories), minus hidden entries, `group_vars`, `host_vars`,
`vars_plugins` and ignored extensions (`.md`, `.txt`, `.cfg`, `.retry`, backups ...); vars files
are loaded for each group_vars/host_vars entry (a file, or a directory read recursively in sorted
order, taking files with no extension or .yml/.yaml/.json). Parsing never stops at the first bad
file: every unreadable file becomes a Problem naming the file and line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from ufcctl.domain.inventory.sources import InventorySources, Problem, SourceFile, VarsEntry
from ufcctl.domain.inventory.values import VaultedValue
from ufcctl.engine.yaml_limits import (
    DEPTH_FIX,
    DIGITS_FIX,
    MAX_DEPTH,
    DuplicateKeyError,
    HugeNumberError,
    LimitError,
    json_int,
)
from ufcctl.engine.yaml_loader import load_yaml, mark_unsafe
from ufcctl.errors import cut, shown

YAML_SUFFIXES = (".yml", ".yaml", ".json")
# ansible-core's REJECT_EXTS plus INVENTORY_IGNORE_EXTS defaults.
IGNORED_SUFFIXES = (
    ".pyc",
    ".pyo",
    ".swp",
    ".bak",
    "~",
    ".rpm",
    ".md",
    ".txt",
    ".rst",
    ".orig",
    ".cfg",
    ".retry",
)
IGNORED_NAMES = ("host_vars", "group_vars", "vars_plugins")
VAULT_HEADER = "$ANSIBLE_VAULT;"
# A parser's message quotes the token it stopped at (an alias or tag name may be megabytes long).
MESSAGE_LIMIT = 200
_TOO_DEEP = object()


class _DuplicateJsonKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _json_pairs(pairs: list[tuple[str, Any]]) -> Any:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateJsonKey(key)
        obj[key] = value
    # Ansible's JSON decoder turns these two objects back into tagged values.
    if len(obj) == 1:
        if "__ansible_unsafe" in obj:
            return mark_unsafe(obj["__ansible_unsafe"])
        if "__ansible_vault" in obj:
            return VaultedValue(str(obj["__ansible_vault"]))
    return obj


def _json_depth_exceeds(data: Any, limit: int) -> bool:
    """True when `data` nests more than `limit` lists and mappings deep (walked without recursion)."""
    todo = [(data, 1)]
    while todo:
        value, depth = todo.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        todo.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _parse_json(text: str, display: str) -> tuple[Any, Problem | None] | None:
    """The parsed JSON, a Problem, or None when the text is not JSON after all (YAML decides)."""
    try:
        data = json.loads(text, object_pairs_hook=_json_pairs, parse_int=json_int)
    except HugeNumberError as err:
        return None, Problem(display, "", str(err), DIGITS_FIX)
    except _DuplicateJsonKey as err:
        message = f"duplicate key {shown(err.key)} in one JSON object"
        return None, Problem(display, "", message, "keep one of them (JSON readers keep the last)")
    except RecursionError:
        data = _TOO_DEEP
    except ValueError:
        return None
    if data is _TOO_DEEP or _json_depth_exceeds(data, MAX_DEPTH):
        return None, Problem(display, "", f"nested more than {MAX_DEPTH} levels deep", DEPTH_FIX)
    return data, None


def parse_text(text: str, display: str) -> tuple[Any, Problem | None]:
    """Parse one file's text the way Ansible does: JSON first when it looks like JSON, else YAML."""
    stripped = text.lstrip()
    if stripped.startswith(VAULT_HEADER):
        return None, Problem(
            display,
            "",
            "the file is vault-encrypted; ufcctl cannot read whole-file vaults",
            "decrypt it and vault only the secret values (`ansible-vault encrypt_string`)",
        )
    if stripped[:1] in ("{", "["):
        parsed = _parse_json(text, display)
        if parsed is not None:
            return parsed
    try:
        return load_yaml(text), None
    except DuplicateKeyError as err:
        return None, Problem(
            _where(display, err), "", err.problem or "duplicate key",
            "keep one of them: YAML allows a key once per mapping and Ansible would use the last",
        )
    except LimitError as err:
        return None, Problem(_where(display, err), "", err.problem or "past a limit", err.fix)
    except yaml.MarkedYAMLError as err:
        what = " ".join(filter(None, [err.context, err.problem]))
        return None, Problem(_where(display, err), "", f"invalid YAML: {cut(what, MESSAGE_LIMIT)}",
                             "fix the syntax at that line")
    except yaml.YAMLError as err:
        what = " ".join(str(err).split())
        return None, Problem(display, "", f"invalid YAML: {cut(what, MESSAGE_LIMIT)}", "fix the syntax")


def _where(display: str, err: yaml.MarkedYAMLError) -> str:
    mark = err.problem_mark or err.context_mark
    return f"{display}:{mark.line + 1}:{mark.column + 1}" if mark else display


_KINDS = {stat.S_IFIFO: "FIFO (named pipe)", stat.S_IFSOCK: "socket", stat.S_IFCHR: "character device",
          stat.S_IFBLK: "block device"}


def _not_regular(path: Path, display: str) -> Problem | None:
    """A Problem for anything but a regular file (after links): reading a FIFO blocks until a writer
    comes, and a link to /dev/zero or /dev/urandom never ends (it would fill the memory)."""
    try:
        mode = path.stat().st_mode
    except OSError as err:
        return Problem(display, "", f"cannot read the file: {err.strerror or err}",
                       "check the path and its links")
    if stat.S_ISREG(mode):
        return None
    return Problem(
        display,
        "",
        f"is a {_KINDS.get(stat.S_IFMT(mode), 'special file')}, not a regular file: "
        "ufcctl reads regular files only",
        "remove it from the inventory directory (or make it a regular file)",
    )


def _read(path: Path, root: Path) -> tuple[SourceFile | None, Problem | None]:
    display = path.relative_to(root).as_posix()
    problem = _not_regular(path, display)
    if problem is not None:
        return None, problem
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return None, Problem(
            display, "", f"cannot read the file: {err}", "check its permissions and encoding"
        )
    data, problem = parse_text(text, display)
    return (None, problem) if problem else (SourceFile(display, data), None)


def _ignored(name: str) -> bool:
    return name.startswith(".") or name in IGNORED_NAMES or name.endswith(IGNORED_SUFFIXES)


_INI_SECTION = re.compile(r"^\s*\[[^\]\s]+\]\s*(?:[#;].*)?$", re.M)


def _unsupported(path: Path, display: str) -> Problem:
    return Problem(
        display,
        "",
        "an INI, script or TOML inventory: ufcctl reads YAML inventories only",
        f"convert it with `ansible-inventory -i {display} --list --yaml > hosts.yml` and remove it",
    )


def _inventory_files(
    directory: Path, root: Path, out: list[SourceFile], problems: list[Problem], warnings: list[Problem]
) -> None:
    for name in sorted(os.listdir(directory)):
        if _ignored(name):
            continue
        path = directory / name
        if path.is_dir():
            _inventory_files(path, root, out, problems, warnings)
            continue
        display = path.relative_to(root).as_posix()
        problem = _not_regular(path, display)
        if problem is not None:
            problems.append(problem)
            continue
        if name.endswith(YAML_SUFFIXES):
            source, problem = _read(path, root)
            if problem:
                problems.append(problem)
            elif source is not None and source.data is None:
                warnings.append(Problem(display, "", "empty inventory file, ignored (as Ansible does)"))
            elif source is not None:
                out.append(source)
            continue
        # Anything else Ansible offers to its script, YAML, INI and TOML plugins in turn. Refuse
        # what one of the others would read (hosts silently missing is worse than an error), take
        # YAML, and skip the rest as Ansible does after its "Unable to parse" warning.
        if name.endswith((".ini", ".toml")) or os.access(path, os.X_OK):
            problems.append(_unsupported(path, display))
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            warnings.append(Problem(display, "", "not an inventory file (not text), ignored"))
            continue
        if _INI_SECTION.search(text):
            problems.append(_unsupported(path, display))
            continue
        data, problem = (None, None) if os.path.splitext(name)[1] else parse_text(text, display)
        if problem is None and isinstance(data, dict) and data:  # Ansible's YAML plugin takes no-suffix files
            out.append(SourceFile(display, data))
        else:
            warnings.append(
                Problem(
                    display,
                    "",
                    "not a YAML inventory, ignored",
                    "if it is an INI inventory convert it to YAML; otherwise move it out of the inventory "
                    "directory or give it an extension Ansible ignores (.txt)",
                )
            )


def _vars_dir_files(directory: Path, root: Path, out: list[SourceFile], problems: list[Problem]) -> None:
    # Ansible: sorted entries, hidden and `~` backups skipped, subdirectories without an extension
    # walked recursively, files taken when they have no extension or a YAML/JSON one.
    for name in sorted(os.listdir(directory)):
        if name.startswith(".") or name.endswith("~"):
            continue
        path = directory / name
        suffix = os.path.splitext(name)[1]
        if path.is_dir():
            if not suffix:
                _vars_dir_files(path, root, out, problems)
        elif not suffix or suffix in YAML_SUFFIXES:
            source, problem = _read(path, root)
            if problem:
                problems.append(problem)
            elif source is not None:
                out.append(source)


def _vars_entries(folder: Path, root: Path, problems: list[Problem]) -> dict[str, VarsEntry]:
    entries: dict[str, VarsEntry] = {}
    if not folder.is_dir():
        return entries
    for name in sorted(os.listdir(folder)):
        # The same names Ansible could ever look up: an entity's name (any suffix, e.g. a host
        # called node1.example.com) or name + .yml/.yaml/.json. Docs and backups are never read.
        if name.startswith(".") or name.endswith(IGNORED_SUFFIXES):
            continue
        path = folder / name
        files: list[SourceFile] = []
        if path.is_dir():
            _vars_dir_files(path, root, files, problems)
            entries[name] = VarsEntry(name, True, tuple(files))
        else:
            source, problem = _read(path, root)
            if problem:
                problems.append(problem)
            elif source is not None:
                entries[name] = VarsEntry(name, False, (source,))
    return entries


def read_inventory_dir(path: Path) -> InventorySources:
    """Parse every file of an inventory directory; unreadable files become problems, not exceptions."""
    root = Path(path)
    problems: list[Problem] = []
    warnings: list[Problem] = []
    files: list[SourceFile] = []
    _inventory_files(root, root, files, problems, warnings)
    if not files and not problems:
        problems.append(
            Problem(
                str(root),
                "",
                "no inventory file found",
                "create hosts.yml (see inventories/sample/hosts.yml)",
            )
        )
    return InventorySources(
        root=str(root),
        inventory_files=tuple(files),
        group_vars=_vars_entries(root / "group_vars", root, problems),
        host_vars=_vars_entries(root / "host_vars", root, problems),
        problems=tuple(problems),
        warnings=tuple(warnings),
    )


def fingerprint(path: Path) -> str:
    """A hash of the files of an inventory directory: names and bytes, in sorted order.

    Every file Ansible may read counts (hidden entries and the suffixes it ignores do not), a little
    more than ufcctl parses: a stray file changing says "changed" rather than a node list changing
    unseen. Reading bytes and hashing costs about a millisecond per MB.
    """
    digest = hashlib.sha256()
    root = Path(path)
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or name.endswith(IGNORED_SUFFIXES):
                continue
            file = Path(directory) / name
            try:
                data = file.read_bytes()
            except OSError as err:  # unreadable now: different from what the run read
                data = f"<unreadable: {err.strerror}>".encode()
            digest.update(file.relative_to(root).as_posix().encode() + b"\0")
            digest.update(len(data).to_bytes(8, "big") + data)
    return "sha256:" + digest.hexdigest()
