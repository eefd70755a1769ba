"""The event-built YAML loader: what yaml.safe_load gives, within the depth, alias and duplicate-key
limits."""

from __future__ import annotations

import datetime as dt

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ufcctl.domain.inventory.values import UnsafeText
from ufcctl.engine.yaml_loader import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    DuplicateKeyError,
    LimitError,
    load_yaml,
    load_yaml_documents,
)

SAME_AS_SAFE_LOAD = [
    pytest.param("a: 1\nb: [1, 2, {c: d}]\n", id="plain"),
    pytest.param("x: &a {k: [1]}\ny: *a\nz: &s text\nw: *s\n", id="anchors and aliases"),
    pytest.param("base: &b {a: 1, b: 2}\nx:\n  <<: *b\n  b: 3\n", id="merge key, explicit wins"),
    pytest.param("a: &a {k: 1, x: a}\nb: &b {k: 2, y: b}\nc:\n  <<: [*a, *b]\n", id="merge list, first wins"),
    pytest.param("a: &a {k: 1}\nc:\n  <<: *a\n  <<: {k: 2, j: 3}\n", id="two merge keys"),
    pytest.param("a: &x {<<: {k: 1, j: 1}, j: 2}\nb: *x\nc: {<<: [*x, {k: 3, m: 4}], m: 5}\n", id="nested"),
    pytest.param("a: &o !!omap [{k: 1}]\nb: {<<: *o}\n", id="merging an omap (PyYAML builds it)"),
    pytest.param("=: 1\n", id="equals sign as a key"),
    pytest.param(
        "a: !!set {x, y}\nb: !!omap [{p: 1}, {q: 2}]\nc: !!pairs [{p: 1}, {p: 2}]\n", id="tagged collections"
    ),
    pytest.param("a: !!binary aGk=\nb: !!str 12\nc: !!int '7'\nd: !!float '1'\n", id="tagged scalars"),
    pytest.param("a: 2024-01-02\nb: 2024-01-02 10:00:00\nc: 1e3\nd: .inf\ne: 0o17\nf: 1_000\n", id="typed"),
    pytest.param("a: yes\nb: No\nc: ~\nd: ''\ne:\nf: null\ng: 'yes'\n", id="bool and null"),
    pytest.param("- a\n- - b\n  - [c, {d: [e]}]\n- {}\n- []\n", id="nested"),
    pytest.param("", id="empty"),
    pytest.param("# only a comment\n", id="comment"),
    pytest.param("42\n", id="scalar document"),
    pytest.param("--- !!str x\n", id="tagged root"),
    pytest.param("? a\n: 1\n? b\n", id="explicit keys"),
    pytest.param("{1: a, 1.5: b, false: c, null: d}\n", id="typed keys"),
]


@pytest.mark.parametrize("text", SAME_AS_SAFE_LOAD)
def test_loader_gives_what_safe_load_gives(text: str) -> None:
    expected = yaml.safe_load(text)
    got = load_yaml(text)
    assert got == expected
    assert list(got) == list(expected) if isinstance(expected, dict) else True  # key order too


ERRORS_AS_SAFE_LOAD = [
    pytest.param("? [complex, key]\n: no\n", id="unhashable key"),
    pytest.param("a: *nowhere\n", id="undefined alias"),
    pytest.param("- &a 1\n- &a 2\n", id="anchor given twice"),
    pytest.param("a: 1\n---\nb: 2\n", id="two documents"),
    pytest.param("a: =\n", id="equals sign as a value"),
    pytest.param("a: !!map x\n", id="collection tag on a scalar"),
    pytest.param("a: !nosuchtag x\n", id="unknown tag"),
    pytest.param("a: [1\n", id="syntax"),
    pytest.param("x: &a [1]\ny: {<<: *a}\n", id="merging a list"),
    pytest.param("x: {<<: [{a: 1}, 2]}\n", id="merging a list with a scalar"),
    pytest.param("x: {<<: null}\n", id="merging null"),
]


@pytest.mark.parametrize("text", ERRORS_AS_SAFE_LOAD)
def test_loader_refuses_what_safe_load_refuses(text: str) -> None:
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(text)
    with pytest.raises(yaml.YAMLError):
        load_yaml(text)


def test_ansible_tags_on_the_fast_and_the_generic_path() -> None:
    data = load_yaml("a: !unsafe '{{ x }}'\nb: !unsafe [x, {y: '{{ z }}'}]\nc: &c {k: 1}\nd: {<<: *c}\n")
    assert isinstance(data["a"], UnsafeText)
    assert isinstance(data["b"][0], UnsafeText) and isinstance(data["b"][1]["y"], UnsafeText)
    assert data["d"] == {"k": 1}


def test_aliases_are_the_same_object() -> None:
    data = load_yaml("x: &a {k: [1]}\ny: *a\n")
    assert data["x"] is data["y"]


def test_stream_documents_as_safe_load_all() -> None:
    text = "a: 1\n---\n---\n- b\n--- 3\n"
    assert load_yaml_documents(text) == list(yaml.safe_load_all(text))
    assert load_yaml_documents("") == []


# Trees as kubectl or an inventory generator would write them: plain YAML types, shared subtrees
# (PyYAML's dumper writes those as anchors and aliases), block and flow styles.
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.dates(min_value=dt.date(1900, 1, 1)),
)
_trees = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers(), st.booleans()), inner, max_size=4),
    ),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_trees, st.booleans(), st.data())
def test_dumped_trees_load_as_safe_load_loads_them(tree: object, flow: bool, data: st.DataObject) -> None:
    if isinstance(tree, (list, dict)) and tree and data.draw(st.booleans()):
        tree = {"first": tree, "again": tree}  # the dumper writes an anchor and an alias
    text = yaml.safe_dump(tree, default_flow_style=flow, allow_unicode=data.draw(st.booleans()))
    assert load_yaml(text) == yaml.safe_load(text)


def _nested(depth: int, flow: bool) -> str:
    if flow:
        return "x: " + "[" * (depth - 1) + "]" * (depth - 1) + "\n"
    return "".join("  " * i + f"k{i}:\n" for i in range(depth - 1)) + "  " * (depth - 1) + "k: v\n"


@pytest.mark.parametrize("flow", [True, False], ids=["flow", "block"])
def test_nesting_up_to_the_limit_loads_and_deeper_is_refused_with_its_line(flow: bool) -> None:
    assert load_yaml(_nested(MAX_DEPTH, flow)) is not None
    with pytest.raises(LimitError, match=f"nested more than {MAX_DEPTH} levels deep") as caught:
        load_yaml(_nested(MAX_DEPTH + 1, flow))
    assert caught.value.problem_mark is not None
    assert caught.value.problem_mark.line == (0 if flow else MAX_DEPTH)  # where level 101 starts


def test_a_document_deep_enough_to_crash_libyaml_is_refused() -> None:
    # libyaml's composer recursed in C and killed the process (SIGSEGV) past about 20,000 levels.
    with pytest.raises(LimitError, match="nested more than"):
        load_yaml("x: " + "[" * 50_000 + "]" * 50_000)
    with pytest.raises(LimitError, match="nested more than"):
        load_yaml_documents("- " * 50_000 + "x\n")


def _bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_the_alias_that_passes_the_limit() -> None:
    with pytest.raises(LimitError, match="aliases expand to more than 1,000,000 nodes") as caught:
        load_yaml(_bomb(10))  # 9**10 strings, in 650 bytes
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line == 6  # a6: 9**7 > 10**6
    with pytest.raises(LimitError):
        load_yaml_documents(_bomb(10))


def test_aliases_below_the_limit_load() -> None:
    # 1,000 aliases of a 101-node mapping: about 101,000 added nodes, like `<<: *defaults` per host.
    text = "d: &d {" + ", ".join(f"k{i}: {i}" for i in range(50)) + "}\n"
    text += "".join(f"h{i}: *d\n" for i in range(1000))
    assert 1000 * 101 < MAX_ALIAS_NODES
    data = load_yaml(text)
    assert data["h999"] is data["d"]


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(LimitError, match=r"alias \*a is inside the value it names"):
        load_yaml("a: &a [1, *a]\n")
    with pytest.raises(LimitError, match="recursive"):
        load_yaml_documents("&m {k: *m}\n")


@pytest.mark.parametrize(
    ("text", "key", "line", "first"),
    [
        pytest.param("hosts:\n  cp1:\n    a: 1\n  cp2:\n  cp1:\n    a: 2\n", "cp1", 5, 2, id="host twice"),
        pytest.param("a: 1\nb: 2\na: 3\n", "a", 3, 1, id="top level"),
        pytest.param("x: {a: 1, b: [1, {a: 2}], a: 3}\n", "a", 1, 1, id="flow, nested same key is fine"),
        pytest.param("- {k: 1}\n- k: 1\n  j: 2\n  k: 3\n", "k", 4, 2, id="in a list item"),
        pytest.param("1: a\n'1': b\n1: c\n", 1, 3, None, id="int key (line of the first not shown)"),
    ],
)
def test_duplicate_keys_name_both_lines(text: str, key: object, line: int, first: int | None) -> None:
    with pytest.raises(DuplicateKeyError) as caught:
        load_yaml(text)
    err = caught.value
    assert err.key == key and err.first_line == first
    assert err.problem_mark is not None and err.problem_mark.line + 1 == line
    assert f"duplicate key {key!r}" in str(err)


def test_a_key_overriding_a_merged_one_is_no_duplicate() -> None:
    assert load_yaml("d: &d {a: 1}\nx:\n  <<: *d\n  a: 2\n")["x"] == {"a": 2}


def test_snapshots_keep_safe_loads_last_duplicate() -> None:
    # kubectl never writes duplicate keys; placement input keeps PyYAML's meaning for them.
    assert load_yaml_documents("a: 1\na: 2\n") == [{"a": 2}]
