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
from ufcctl.domain.placement.parse import iter_objects
from ufcctl.domain.placement.reader import position_text
from ufcctl.engine.yaml_limits import DIGITS_FIX, HugeNumberError, LimitError, json_int
from ufcctl.engine.yaml_loader import load_yaml_documents
from ufcctl.errors import InputError, cut

STDIN = "-"
SNAPSHOT_HINT = (
    "pass the output of `kubectl get nodes,pods,configmaps,podgroups.scheduling.volcano.sh,"
    "ascendjobs.mindxdl.gitee.com -A -o json` (or YAML)"
)
# kubectl writes nothing to stdout when `get` fails (wrong context, no access, unknown resource).
MESSAGE_LIMIT = 200  # characters of a parser's message (it quotes the token it stopped at)
EMPTY_HINT = "the `kubectl get` that wrote it probably failed: rerun it and read its error; " + SNAPSHOT_HINT
EMPTY_LIST_HINT = (
    "the `kubectl get` found nothing: check its context and namespace (-A for all); " + SNAPSHOT_HINT
)


def validate_files(paths: Sequence[str], *, super_pod_size: int = DEFAULT_SUPER_POD_SIZE) -> Report:
    """Validate the objects of every file together (nodes from one file, jobs from another is fine)."""
    with cyclic_gc_paused():
        documents: list[tuple[str | None, Any]] = []
        for path in paths:
            found = read_documents(path)
            if not found:
                raise InputError(f"{path}: no Kubernetes objects (empty input)", EMPTY_HINT)
            documents.extend((path, document) for document in found)
        try:
            if not _count_objects(documents):
                names = ", ".join(paths)
                raise InputError(f"{names}: no Kubernetes objects (only empty Lists)", EMPTY_LIST_HINT)
            return validate_documents(documents, super_pod_size=super_pod_size)
        except ParseError as err:
            hint = err.hint or "fix or remove that object; the placement rules need it readable"
            raise InputError(str(err), hint) from None


def _count_objects(documents: Sequence[tuple[str | None, Any]]) -> int:
    """Objects in the documents (List items counted one by one), numbered as parse_objects numbers them."""
    count = 0
    for number, (source, document) in enumerate(documents, 1):
        if document == {}:
            raise ParseError(position_text((number,)), "an empty object ({}): no Kubernetes object", source,
                             EMPTY_HINT)
        count += sum(1 for _ in iter_objects(document, source, (number,)))
    return count


def read_documents(path: str) -> list[Any]:
    """The decoded documents of one file: one for JSON, one per `---` section for YAML."""
    text = _read_text(path)
    if text.lstrip()[:1] in ("{", "["):
        try:
            return [json.loads(text, parse_int=json_int)]
        except HugeNumberError as err:
            raise InputError(f"{path}: {err}", DIGITS_FIX) from None
        except json.JSONDecodeError as err:
            raise InputError(
                f"{path}: not valid JSON: {err.msg} at line {err.lineno} column {err.colno}", SNAPSHOT_HINT
            ) from None
        except RecursionError:  # Python's JSON reader stops near its recursion limit (1,000 levels)
            raise InputError(
                f"{path}: JSON nested too deeply to read (about 1,000 levels)",
                "kubectl objects nest about 15 levels: this is no kubectl snapshot (README.md, \"Limits\")",
            ) from None
    try:
        return [document for document in load_yaml_documents(text) if document is not None]
    except LimitError as err:
        raise InputError(f"{path}: {_yaml_reason(err)}", err.fix) from None
    except yaml.YAMLError as err:
        raise InputError(f"{path}: not valid YAML: {_yaml_reason(err)}", SNAPSHOT_HINT) from None


def _read_text(path: str) -> str:
    try:
        if path == STDIN:
            return _read_stdin()
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", SNAPSHOT_HINT) from None
    except UnicodeError as err:
        where = f" (byte {err.start})" if isinstance(err, UnicodeDecodeError) else ""
        raise InputError(f"{path}: not UTF-8 text{where}", SNAPSHOT_HINT) from None
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}", None) from None


def _read_stdin() -> str:
    stream = sys.stdin
    if stream is None or stream.closed:  # None: ufcctl was started with stdin closed (`<&-`)
        raise InputError(
            f"{STDIN}: standard input is closed",
            "pipe the snapshot in (`kubectl get ... -o json | ufcctl placement validate -`) or pass a file",
        )
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:  # decoded strictly here: in a C locale the text layer hides bad bytes
        return bytes(buffer.read()).decode("utf-8")
    text = stream.read()
    text.encode("utf-8")  # surrogates standing for undecodable bytes fail here
    return text


def _yaml_reason(err: yaml.YAMLError) -> str:
    """One line from a (multi-line) PyYAML error: the problem and where it is."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        return f"{cut(str(err.problem or err.context), MESSAGE_LIMIT)}{where}"
    return cut(" ".join(str(err).split()), MESSAGE_LIMIT)
