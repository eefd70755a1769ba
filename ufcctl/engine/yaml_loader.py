"""The YAML reader for every YAML file ufcctl reads (inventories, vars files, placement snapshots).

Results equal `yaml.safe_load`'s (plus Ansible's `!unsafe`/`!vault` tags for inventories;
tests/unit/engine/test_yaml_loader.py compares them), within three limits that PyYAML does not
have. Documents are built straight from libyaml's parser events in one loop, with no recursion and
no node graph in between. That makes the limits free, and loading faster than PyYAML's
compose-then-construct: the 3 MB hosts.yml of 16,000 explicit hosts (tests/benchmarks/
bench_inventory.py) takes 0.39 s CPU instead of 0.52 s, 0.44 s instead of 0.89 s with a
`<<: *defaults` under every host. The limits (README.md, "Limits"):
- nesting: at most MAX_DEPTH levels of mappings and lists. libyaml's composer recurses in C, one
  stack frame per level, and crashes the process (SIGSEGV) past about 20,000 levels; PyYAML's
  constructor and Ansible recurse in Python. Checked on the parser's events, before any composing.
- alias expansion: aliases may add at most MAX_ALIAS_NODES nodes to a document ("billion laughs":
  nine aliases of nine aliases ... are a few hundred bytes that expand to billions of nodes, and
  every copy is written out per host in the inventory Ansible reads). Each anchored value's
  expanded size is counted once, so the check is linear in the document even for a bomb.
  An alias inside the value it names (a recursive structure) is refused too: nothing can write
  it out.
- duplicate keys in one mapping (inventories only): YAML forbids them and PyYAML silently keeps
  the last, so a host listed twice quietly gets the second address.
Plain scalars whose first character starts no implicit type (bool, int, float, null, ...) are
strings without trying the type regexes, which is most of a large inventory. Merge keys `<<` are
applied as PyYAML's flatten_mapping does. Tagged collections (`!unsafe [..]`, `!!set`, ...) are
rare: such a document is built afterwards by PyYAML's own constructor, once the event pass has
checked the limits.
"""

from __future__ import annotations

import types
from typing import Any, Final

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.error import Mark
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import Node, ScalarNode, SequenceNode

from ufcctl.domain.inventory.values import UnsafeText, VaultedValue
from ufcctl.engine.yaml_limits import (
    ALIAS_FIX,
    DEPTH_FIX,
    DIGITS_FIX,
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    MAX_INT_BITS,
    RECURSION_FIX,
    DuplicateKeyError,
    LimitError,
    too_many_digits,
)

try:  # libyaml's parser; the pure-Python one is about ten times slower
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

STR_TAG = "tag:yaml.org,2002:str"
MAP_TAG = "tag:yaml.org,2002:map"
SEQ_TAG = "tag:yaml.org,2002:seq"
MERGE_TAG = "tag:yaml.org,2002:merge"
VALUE_TAG = "tag:yaml.org,2002:value"


class _AnsibleTags(_BaseLoader):  # type: ignore[misc,valid-type]
    """SafeLoader plus Ansible's two tags: what PyYAML's own constructor builds unusual documents with."""


def _construct_unsafe(loader: _AnsibleTags, node: Node) -> Any:
    if isinstance(node, ScalarNode):
        return UnsafeText(loader.construct_scalar(node))
    if isinstance(node, SequenceNode):
        return [mark_unsafe(v) for v in loader.construct_sequence(node, deep=True)]
    return {k: mark_unsafe(v) for k, v in loader.construct_mapping(node, deep=True).items()}  # type: ignore[arg-type]


def mark_unsafe(value: Any) -> Any:
    """`value` with every string in it marked `!unsafe` (how Ansible treats a tagged collection)."""
    if isinstance(value, str):
        return UnsafeText(value)
    if isinstance(value, list):
        return [mark_unsafe(v) for v in value]
    if isinstance(value, dict):
        return {k: mark_unsafe(v) for k, v in value.items()}
    return value


def _construct_vault(loader: _AnsibleTags, node: Node) -> VaultedValue:
    return VaultedValue(str(loader.construct_scalar(node)))  # type: ignore[arg-type]


_AnsibleTags.add_constructor("!unsafe", _construct_unsafe)
_AnsibleTags.add_constructor("!vault", _construct_vault)


class InventoryLoader(_AnsibleTags):
    """Inventory files, group_vars and host_vars: Ansible's tags, duplicate keys refused."""

    reject_duplicate_keys = True
    constructor_loader: type = _AnsibleTags


class SnapshotLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """kubectl snapshots for `placement validate`: plain safe_load semantics, with the same limits."""

    reject_duplicate_keys = False
    constructor_loader: type = _BaseLoader


def _first_chars(loader: Any) -> frozenset[str]:
    resolvers = loader.yaml_implicit_resolvers
    if None in resolvers:  # a resolver for any first character: no shortcut (empty set = off)
        return frozenset()
    return frozenset(k for k in resolvers if k)


_TYPED_FIRST_CHARS = _first_chars(_BaseLoader)
_OPEN = object()  # anchors[name] while the anchored collection is still being read
_MERGE = object()  # the pending key is `<<`


def load_yaml(text: str) -> Any:
    """One inventory YAML document (None if empty); yaml.YAMLError on bad input or past a limit."""
    documents = _load(text, InventoryLoader, single=True)
    return documents[0] if documents else None


def load_yaml_documents(text: str) -> list[Any]:
    """Every document of a YAML stream (`---` separated), empty ones included as None."""
    return _load(text, SnapshotLoader, single=False)


def _load(text: str, loader_class: Any, *, single: bool) -> list[Any]:
    loader = loader_class(text)
    try:
        documents, unusual = _build_stream(loader, text, single)
    finally:
        loader.dispose()
    if not unusual:
        return documents
    # Merge keys or tagged collections: PyYAML builds them from its node graph. The event pass has
    # checked the whole stream, so its C composer and recursive constructor stay within bounds.
    base = loader_class.constructor_loader
    try:
        if single:
            return [yaml.load(text, Loader=base)]  # noqa: S506 - a SafeLoader subclass
        return list(yaml.load_all(text, Loader=base))  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise LimitError("nested too deeply for PyYAML's constructor", None, DEPTH_FIX) from None
    except ValueError:  # an int of too many digits under a tag: the event pass builds the others
        raise LimitError(too_many_digits(None), None, DIGITS_FIX) from None


def _build_stream(loader: Any, text: str, single: bool) -> tuple[list[Any], bool]:
    get, check = loader.get_event, loader.check_event
    get()  # StreamStartEvent
    documents: list[Any] = []
    unusual = False
    while not check(StreamEndEvent):
        start = get()  # DocumentStartEvent
        data, odd = _build_document(loader, text)
        get()  # DocumentEndEvent
        documents.append(data)
        unusual = unusual or odd
        if single and not check(StreamEndEvent):
            raise ComposerError(
                "expected a single document in the stream",
                start.start_mark,
                "but found another document",
                loader.peek_event().start_mark,
            )
    get()  # StreamEndEvent
    return documents, unusual


# One stack entry per open collection: the enclosing collection's state to restore at its end
# (container, is_map, pending key, key pending, key mark, merge sources), then this collection's
# anchor, the node count before it and its start mark.
_Frame = tuple[Any, bool, Any, bool, "Mark | None", Any, "str | None", int, "Mark | None"]
_START: Final = 8  # index of the start mark in a _Frame


def _build_document(loader: Any, text: str) -> tuple[Any, bool]:  # noqa: C901 - one flat loop, on purpose
    """The next document from the parser's events; True when PyYAML must build it instead."""
    get = loader.get_event
    resolve = loader.resolve
    constructors = loader.yaml_constructors
    typed = _TYPED_FIRST_CHARS
    reject_duplicates = loader.reject_duplicate_keys
    stack: list[_Frame] = []
    anchors: dict[str, Any] = {}  # name -> (value, expanded node count), or _OPEN
    anchor_marks: dict[str, Mark] = {}
    count = 0  # nodes so far, aliases expanded
    added = 0  # nodes added by aliases
    unusual = False
    current: Any = None  # the collection being filled (None: the document's root is next)
    is_map = False
    key: Any = None  # a mapping's pending key, read before its value
    have_key = False
    key_mark: Mark | None = None
    merges: list[list[dict[Any, Any]]] | None = None  # the mapping's `<<` values, in order
    while True:
        event = get()
        kind = event.__class__
        if kind is ScalarEvent:
            count += 1
            raw = event.value
            tag = event.tag
            if tag is None or tag == "!":
                implicit = event.implicit
                if implicit[0] and raw and typed and raw[0] not in typed:
                    tag = STR_TAG
                else:
                    tag = resolve(ScalarNode, raw, implicit)
            if tag == STR_TAG:
                value = raw
            elif is_map and not have_key and tag == MERGE_TAG:
                value = _MERGE
            elif is_map and not have_key and tag == VALUE_TAG:  # `=` as a key is the string (flatten_mapping)
                value = raw
            else:
                value = _construct_scalar(loader, constructors, tag, event)
            anchor = event.anchor
            if anchor is not None:
                _new_anchor(anchors, anchor_marks, anchor, event.start_mark)
                anchors[anchor] = (value, 1)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            count += 1
            if is_map and not have_key:
                mapping_mark = stack[-1][_START]
                raise ConstructorError(
                    "while constructing a mapping", mapping_mark, "found unhashable key", event.start_mark
                )
            if len(stack) >= MAX_DEPTH:
                raise LimitError(f"nested more than {MAX_DEPTH} levels deep", event.start_mark, DEPTH_FIX)
            mapping = kind is MappingStartEvent
            tag = event.tag
            if tag is not None and tag != "!" and tag != (MAP_TAG if mapping else SEQ_TAG):
                unusual = True  # built as plain here for the checks; PyYAML gives it its meaning
            anchor = event.anchor
            if anchor is not None:
                _new_anchor(anchors, anchor_marks, anchor, event.start_mark)
                anchors[anchor] = _OPEN
            frame = (current, is_map, key, have_key, key_mark, merges, anchor, count - 1, event.start_mark)
            stack.append(frame)
            current = {} if mapping else []
            is_map, have_key, merges = mapping, False, None
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            value = current if merges is None else _merged(merges, current)
            current, is_map, key, have_key, key_mark, merges, anchor, before, _ = stack.pop()
            if anchor is not None:
                anchors[anchor] = (value, count - before)
        elif kind is AliasEvent:
            name = event.anchor
            entry = anchors.get(name)
            if entry is None:
                raise ComposerError(None, None, f"found undefined alias {name!r}", event.start_mark)
            if entry is _OPEN:
                raise LimitError(
                    f"alias *{name} is inside the value it names (a recursive structure)",
                    event.start_mark,
                    RECURSION_FIX,
                )
            value, size = entry
            count += size
            added += size
            if added > MAX_ALIAS_NODES:
                raise LimitError(
                    f"aliases expand to more than {MAX_ALIAS_NODES:,} nodes (an alias bomb?)",
                    event.start_mark,
                    ALIAS_FIX,
                )
        else:  # pragma: no cover - libyaml gives only node events inside a document
            raise ComposerError(None, None, f"unexpected {kind.__name__}", event.start_mark)
        if current is None:  # the root is complete
            return value, unusual
        if not is_map:
            current.append(value)
        elif not have_key:
            key, key_mark, have_key = value, event.start_mark, True
        else:
            have_key = False
            if key is _MERGE:
                sources = _merge_sources(value)
                if sources is None and not unusual:  # (PyYAML decides documents with tags)
                    raise ConstructorError(
                        "while constructing a mapping", stack[-1][_START],
                        "expected a mapping or list of mappings for merging", event.start_mark,
                    )
                merges = (merges or []) + [sources or []]
                continue
            try:
                if reject_duplicates and key in current:
                    first = _first_key_line(loader, text, stack[-1][_START], key)
                    raise DuplicateKeyError(key, key_mark, first)
                current[key] = value
            except TypeError:
                raise ConstructorError(
                    "while constructing a mapping", stack[-1][_START], "found unhashable key", key_mark
                ) from None


def _merge_sources(value: Any) -> list[dict[Any, Any]] | None:
    """The mappings a `<<` value merges, lowest priority first, or None if it is no mapping or list of them.

    PyYAML's flatten_mapping: with `<<: [*a, *b]` the keys of *a win over those of *b.
    """
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return value[::-1]
    return None


def _merged(merges: list[list[dict[Any, Any]]], explicit: dict[Any, Any]) -> dict[Any, Any]:
    """The mapping with its `<<` sources under it: merged keys first, explicit keys win."""
    result: dict[Any, Any] = {}
    for sources in merges:
        for source in sources:
            result.update(source)
    result.update(explicit)
    return result


def _construct_scalar(loader: Any, constructors: dict[Any, Any], tag: str, event: Any) -> Any:
    node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
    constructor = constructors.get(tag)
    try:
        value = constructor(loader, node) if constructor else loader.construct_object(node)
    except ValueError:  # int() of more than 4,300 digits (the only ValueError PyYAML's constructors let out)
        raise LimitError(too_many_digits(len(event.value)), event.start_mark, DIGITS_FIX) from None
    if type(value) is int and value.bit_length() > MAX_INT_BITS:  # 0x..., 0b...: no digit limit in int()
        raise LimitError(too_many_digits(len(event.value)), event.start_mark, DIGITS_FIX)
    if isinstance(value, types.GeneratorType):  # a collection tag on a scalar: PyYAML's error
        value.close()
        value = loader.construct_object(node, deep=True)
    return value


def _new_anchor(anchors: dict[str, Any], marks: dict[str, Mark], name: str, mark: Mark) -> None:
    if name in anchors:
        raise ComposerError(
            f"found duplicate anchor {name!r}; first occurrence", marks[name], "second occurrence", mark
        )
    marks[name] = mark


def _first_key_line(loader: Any, text: str, mapping_mark: Mark | None, key: Any) -> int | None:
    """Line of the first `key` in the mapping starting at `mapping_mark` (read again: errors only)."""
    if mapping_mark is None or not isinstance(key, str):
        return None
    target = mapping_mark.index
    again = type(loader)(text)
    try:
        depth = -1  # -1 until the mapping starts; then 0 for its own keys and values
        expect_key = True
        while not again.check_event(StreamEndEvent):
            event = again.get_event()
            if depth < 0:
                start = getattr(event.start_mark, "index", -1)
                if isinstance(event, MappingStartEvent) and start == target:
                    depth = 0
            elif isinstance(event, (MappingStartEvent, SequenceStartEvent)):
                depth += 1
            elif isinstance(event, (MappingEndEvent, SequenceEndEvent)):
                if depth == 0:
                    return None
                depth -= 1
                expect_key = expect_key if depth else not expect_key
            elif depth == 0:
                if expect_key and _is_string(again, event, key):
                    return int(event.start_mark.line) + 1
                expect_key = not expect_key
    except yaml.YAMLError:
        return None
    finally:
        again.dispose()
    return None


def _is_string(loader: Any, event: Any, key: str) -> bool:
    if not isinstance(event, ScalarEvent) or event.value != key:
        return False
    tag = event.tag
    if tag is None or tag == "!":
        tag = loader.resolve(ScalarNode, event.value, event.implicit)
    return bool(tag == STR_TAG)
