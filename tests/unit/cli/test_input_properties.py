"""Property: whatever bytes or YAML/JSON tree an inventory file, a vars file or a placement input holds,
ufcctl answers with exit 0, 1 or 2 and its own message: never an internal error or a traceback, and
within a hang guard and a memory cap (the loaders run in this process through click's CliRunner)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import resource
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ufcctl.cli.main import cli

# One example's hang guard (wall clock), not a speed test: a 1,024-host range inventory took more than 30 s
# once in a CI rehearsal at load 10 and well under that when Hypothesis ran it again (2026-12-07)
HANG_GUARD_SECONDS = 120
MEMORY_HEADROOM = 2 * 2**30  # address space one example may add before MemoryError

SETTINGS = settings(
    max_examples=200,
    deadline=None,  # the hang guard below stands in for it, with room for a loaded machine
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
)


class Hung(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Hung(f"one example took more than {HANG_GUARD_SECONDS} s")


@contextlib.contextmanager
def bounded() -> Iterator[None]:
    """A hang guard (SIGALRM) and an address-space cap around one example."""
    old_handler = signal.signal(signal.SIGALRM, _alarm)
    old_limit = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        in_use = int(statm.read().split()[0]) * resource.getpagesize()
    cap = in_use + MEMORY_HEADROOM
    if old_limit[1] != resource.RLIM_INFINITY:
        cap = min(cap, old_limit[1])
    resource.setrlimit(resource.RLIMIT_AS, (cap, old_limit[1]))
    signal.alarm(HANG_GUARD_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        resource.setrlimit(resource.RLIMIT_AS, old_limit)
        signal.signal(signal.SIGALRM, old_handler)


def invoke(args: list[str], stdin: bytes | None = None) -> Result:
    with bounded():
        result = CliRunner().invoke(cli, args, input=stdin)
    assert result.exit_code in (0, 1, 2), result.output
    assert "internal error" not in result.output, result.output
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


# -- what the inputs are made of

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.floats(allow_nan=False),
    st.text(max_size=16),
    st.sampled_from(["10.0.0.1", "fe80::1", "root", "22", "{{ x }}", "{{ lookup('env', 'HOME') }}", ""]),
    st.dates(min_value=dt.date(1900, 1, 1)),
)
trees = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers(-5, 5)), inner, max_size=4),
    ),
    max_leaves=20,
)
# Host and group names with range syntax in them, small enough to expand.
_names = st.text(alphabet="abn019[]:-_.", min_size=1, max_size=10)
_var_names = st.sampled_from(
    ["ansible_host", "ansible_port", "ansible_user", "ansible_ssh_host", "ansible_group_priority",
     "npu_tor_id", "npu_accelerator_type", "rack", "k"]
)
_vars = st.dictionaries(st.one_of(_var_names, st.text(max_size=6)), trees, max_size=4)
_group = st.fixed_dictionaries(
    {},
    optional={
        "hosts": st.one_of(_names, st.dictionaries(_names, st.one_of(st.none(), _vars), max_size=4)),
        "vars": _vars,
        "children": st.dictionaries(_names, st.none(), max_size=3),
    },
)
inventories = st.one_of(
    st.dictionaries(_names, st.one_of(st.none(), _group), max_size=4).map(lambda g: {"all": {"children": g}}),
    st.dictionaries(_names, st.one_of(st.none(), _group, trees), max_size=4),
    trees,
)
# YAML's own syntax characters, so anchors, aliases, tags, flow and block structure all turn up.
yaml_like = st.text(alphabet="ab1 \n:-[]{},&*!<>|'\"#?%.=~", max_size=120)

@st.composite
def hostile(draw: st.DrawFn) -> str:
    """YAML built to hit a limit: deep nesting, alias chains, huge or many-fold host ranges."""
    shape = draw(st.sampled_from(["flow", "block", "aliases", "range", "ranges"]))
    if shape == "flow":
        depth = draw(st.integers(1, 5000))
        return "x: " + "[" * depth + "]" * depth + "\n"
    if shape == "block":
        depth = draw(st.integers(1, 400))
        return "".join("  " * i + f"k{i}:\n" for i in range(depth))
    if shape == "aliases":
        levels, fanout = draw(st.integers(1, 12)), draw(st.integers(1, 9))
        lines = ["a0: &a0 [lol]"]
        lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fanout) + "]" for i in range(1, levels)]
        return "\n".join(lines) + "\n"
    group = "g:\n  hosts:\n"
    if shape == "range":
        return group + f"    n[0:{draw(st.integers(0, 10**12))}]:\n"
    return group + "    n" + "[0:2]" * draw(st.integers(1, 40)) + ":\n"


_kinds = st.sampled_from(["List", "PodList", "Node", "Pod", "ConfigMap", "PodGroup", "AscendJob", "Service"])
_api = st.sampled_from(["v1", "scheduling.volcano.sh/v1beta1", "mindxdl.gitee.com/v1", 7])
kube_objects = st.deferred(
    lambda: st.fixed_dictionaries(
        {"kind": _kinds, "apiVersion": _api},
        optional={
            "metadata": st.one_of(trees, st.fixed_dictionaries({"name": st.text(max_size=6)}, optional={
                "namespace": st.text(max_size=4), "labels": trees, "annotations": trees})),
            "items": st.lists(st.one_of(kube_objects, trees), max_size=3),
            "spec": trees,
            "status": trees,
        },
    )
)

_INVENTORY_FILES = ["hosts.yml", "more.yaml", "inv.json", "group_vars/all.yml", "group_vars/g.json",
                    "host_vars/h1.yml", "host_vars/h1", "noext"]


def _bytes(content: str | bytes) -> bytes:
    return content.encode() if isinstance(content, str) else content


def _dump(tree: Any, style: str) -> str:
    if style == "json":
        return json.dumps(tree, default=str)
    return yaml.safe_dump(tree, default_flow_style=style == "flow", allow_unicode=True)


def _check_inventory(where: str, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "base.yml").write_text("g:\n  hosts:\n    h1:\n")
        path = root / where
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        invoke(["inventory", "check", "-i", str(root)])


def _validate(content: bytes, name: str, via_stdin: bool) -> None:
    if via_stdin:
        invoke(["placement", "validate", "-"], stdin=content)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(content)
        invoke(["placement", "validate", str(path)])


@SETTINGS
@given(
    st.sampled_from(_INVENTORY_FILES),
    st.one_of(st.binary(max_size=300), yaml_like, hostile()).map(_bytes),
)
def test_any_bytes_as_an_inventory_or_vars_file(where: str, content: bytes) -> None:
    _check_inventory(where, content)


@SETTINGS
@given(st.sampled_from(_INVENTORY_FILES), inventories, st.sampled_from(["block", "flow", "json"]))
def test_any_tree_as_an_inventory_or_vars_file(where: str, tree: Any, style: str) -> None:
    _check_inventory(where, _dump(tree, style).encode())


@SETTINGS
@given(st.one_of(st.binary(max_size=300), yaml_like, hostile()).map(_bytes), st.booleans())
def test_any_bytes_as_placement_input(content: bytes, via_stdin: bool) -> None:
    _validate(content, "s.yaml", via_stdin)


@SETTINGS
@given(
    st.one_of(kube_objects, st.lists(kube_objects, max_size=3), trees),
    st.sampled_from(["block", "flow", "json"]),
    st.booleans(),
)
def test_any_tree_as_placement_input(tree: Any, style: str, via_stdin: bool) -> None:
    if style != "json" and isinstance(tree, list) and tree and isinstance(tree[0], dict):
        text = yaml.safe_dump_all(tree)  # several documents
    else:
        text = _dump(tree, style)
    _validate(text.encode(), "s.json" if style == "json" else "s.yaml", via_stdin)


def test_the_guards_are_restored() -> None:
    before = resource.getrlimit(resource.RLIMIT_AS), signal.getsignal(signal.SIGALRM)
    invoke(["placement", "validate", os.devnull])
    assert (resource.getrlimit(resource.RLIMIT_AS), signal.getsignal(signal.SIGALRM)) == before
