"""Use case `placement validate`: read kubectl JSON/YAML snapshots and run the placement rules on them."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ufcctl.app.gcpause import cyclic_gc_paused
from ufcctl.domain.placement import DEFAULT_SUPER_POD_SIZE, ParseError, Report, validate_documents
from ufcctl.errors import InputError

# libyaml's loader is ~10x faster than the pure-Python one on large snapshots; both are safe loaders.
_YamlLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

STDIN = "-"
SNAPSHOT_HINT = (
    "pass the output of `kubectl get nodes,pods,configmaps,podgroups.scheduling.volcano.sh,"
    "ascendjobs.mindxdl.gitee.com -A -o json` (or YAML)"
)


def validate_files(paths: Sequence[str], *, super_pod_size: int = DEFAULT_SUPER_POD_SIZE) -> Report:
    """Validate the objects of every file together (nodes from one file, jobs from another is fine)."""
    with cyclic_gc_paused():
        documents: list[tuple[str | None, Any]] = []
        for path in paths:
            documents.extend((path, document) for document in read_documents(path))
        try:
            return validate_documents(documents, super_pod_size=super_pod_size)
        except ParseError as err:
            hint = err.hint or "fix or remove that object; the placement rules need it readable"
            raise InputError(str(err), hint) from None


def read_documents(path: str) -> list[Any]:
    """The decoded documents of one file: one for JSON, one per `---` section for YAML."""
    text = _read_text(path)
    if text.lstrip()[:1] in ("{", "["):
        try:
            return [json.loads(text)]
        except json.JSONDecodeError as err:
            raise InputError(
                f"{path}: not valid JSON: {err.msg} at line {err.lineno} column {err.colno}", SNAPSHOT_HINT
            ) from None
    try:
        return [document for document in yaml.load_all(text, Loader=_YamlLoader) if document is not None]
    except yaml.YAMLError as err:
        raise InputError(f"{path}: not valid YAML: {_yaml_reason(err)}", SNAPSHOT_HINT) from None


def _read_text(path: str) -> str:
    try:
        if path == STDIN:
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", SNAPSHOT_HINT) from None
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not UTF-8 text (byte {err.start})", SNAPSHOT_HINT) from None
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}", None) from None


def _yaml_reason(err: yaml.YAMLError) -> str:
    """One line from a (multi-line) PyYAML error: the problem and where it is."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        return f"{err.problem or err.context}{where}"
    return " ".join(str(err).split())
