"""A YAML loader for inventories: PyYAML's safe semantics, Ansible's `!unsafe`/`!vault` tags, and speed.

Results equal `yaml.safe_load`'s (tests/unit/engine/test_yaml_loader.py compares them). The speed
comes from two shortcuts on top of libyaml's parser (CSafeLoader), which matter at 16,000 hosts
where PyYAML spends most of its time in Python per scalar:
- plain scalars whose first character starts no implicit type (bool, int, float, null, ...) are
  strings without trying the type regexes;
- plain mappings and sequences are built by one direct recursion instead of PyYAML's generic
  two-phase constructor; anything unusual (merge keys `<<`, other tags, recursive anchors)
  goes through PyYAML's own constructor.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import Node, ScalarNode, SequenceNode

from ufcctl.domain.inventory.values import UnsafeText, VaultedValue

try:  # libyaml's parser; the pure-Python one is about ten times slower
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

STR_TAG = "tag:yaml.org,2002:str"
MAP_TAG = "tag:yaml.org,2002:map"
SEQ_TAG = "tag:yaml.org,2002:seq"
MERGE_TAG = "tag:yaml.org,2002:merge"


class InventoryLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """SafeLoader plus Ansible's two tags, with the shortcuts described above."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if (
            kind is ScalarNode
            and implicit[0]
            and value
            and _TYPED_FIRST_CHARS
            and value[0] not in _TYPED_FIRST_CHARS
        ):
            return STR_TAG
        return super().resolve(kind, value, implicit)

    def construct_document(self, node: Node) -> Any:
        self._built: dict[Node, Any] = {}
        self._building: set[Node] = set()
        try:
            return self._build(node)
        finally:
            # Reset PyYAML's own state as its construct_document does.
            self._built, self._building = {}, set()
            self.constructed_objects: dict[Node, Any] = {}
            self.recursive_objects: dict[Node, None] = {}
            self.state_generators: list[Any] = []
            self.deep_construct = False

    def _build(self, node: Node) -> Any:
        kind = node.__class__
        if kind is ScalarNode:
            if node.tag == STR_TAG:
                return node.value
            constructor = self.yaml_constructors.get(node.tag)
            return constructor(self, node) if constructor else self.construct_object(node)
        if node in self._built:  # an alias: the same object, as PyYAML gives
            return self._built[node]
        if node in self._building or not self._plain(node):
            return self._generic(node)
        self._building.add(node)
        if kind is SequenceNode:
            result: Any = [self._build(child) for child in node.value]
        else:
            result = {}
            for key_node, value_node in node.value:
                key = self._build(key_node)
                try:
                    result[key] = self._build(value_node)
                except TypeError:
                    raise ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        "found unhashable key",
                        key_node.start_mark,
                    ) from None
        self._building.discard(node)
        self._built[node] = result
        return result

    @staticmethod
    def _plain(node: Node) -> bool:
        if node.__class__ is SequenceNode:
            return node.tag == SEQ_TAG
        return node.tag == MAP_TAG and not any(key.tag == MERGE_TAG for key, _ in node.value)

    def _generic(self, node: Node) -> Any:
        # PyYAML's own path (merge keys, custom tags on collections, recursive structures).
        data = self.construct_object(node, deep=True)
        while self.state_generators:
            generators, self.state_generators = self.state_generators, []
            for generator in generators:
                for _ in generator:
                    pass
        self._built[node] = data
        return data


def _first_chars(loader: Any) -> frozenset[str]:
    resolvers = loader.yaml_implicit_resolvers
    if None in resolvers:  # a resolver for any first character: no shortcut (empty set = off)
        return frozenset()
    return frozenset(k for k in resolvers if k)


_TYPED_FIRST_CHARS = _first_chars(_BaseLoader)


def _construct_unsafe(loader: InventoryLoader, node: Node) -> Any:
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


def _construct_vault(loader: InventoryLoader, node: Node) -> VaultedValue:
    return VaultedValue(str(loader.construct_scalar(node)))  # type: ignore[arg-type]


InventoryLoader.add_constructor("!unsafe", _construct_unsafe)
InventoryLoader.add_constructor("!vault", _construct_vault)


def load_yaml(text: str) -> Any:
    """Parse one YAML document (yaml.YAMLError on bad input, as PyYAML raises it)."""
    return yaml.load(text, Loader=InventoryLoader)  # noqa: S506 - a SafeLoader subclass
