"""Resolution follows ansible-core: structure, ungrouped, depth/priority/name order, vars precedence."""

from __future__ import annotations

from typing import Any

import pytest

from ufcctl.domain.inventory.resolve import resolve
from ufcctl.domain.inventory.sources import InventorySources, SourceFile, VarsEntry


def sources(
    *files: Any,
    group_vars: dict[str, Any] | None = None,
    host_vars: dict[str, Any] | None = None,
) -> InventorySources:
    """Inventory files given as data; vars entries as {entry name: data or [data, ...] for a directory}."""

    def entries(folder: str, spec: dict[str, Any] | None) -> dict[str, VarsEntry]:
        out = {}
        for name, data in (spec or {}).items():
            if isinstance(data, list):
                files_ = tuple(SourceFile(f"{folder}/{name}/{i}.yml", d) for i, d in enumerate(data))
                out[name] = VarsEntry(name, True, files_)
            else:
                out[name] = VarsEntry(name, False, (SourceFile(f"{folder}/{name}", data),))
        return out

    return InventorySources(
        root="inv",
        inventory_files=tuple(SourceFile(f"f{i}.yml", data) for i, data in enumerate(files)),
        group_vars=entries("group_vars", group_vars),
        host_vars=entries("host_vars", host_vars),
    )


def host_var(src: InventorySources, host: str, key: str) -> Any:
    result = resolve(src)
    assert not result.problems, result.problems
    return result.inventory.hosts[host].vars[key]


NESTED = {
    "all": {
        "vars": {"v": "all"},
        "children": {
            "parent": {
                "vars": {"v": "parent"},
                "children": {"child": {"hosts": {"h": None}, "vars": {"v": "child"}}},
            },
            "sibling": {"hosts": {"h": None}, "vars": {"v": "sibling"}},
        },
    }
}

PRECEDENCE = [
    ("deeper group beats shallower", sources(NESTED), "child"),
    ("all is lowest", sources({"all": {"vars": {"v": "all"}, "hosts": {"h": None}}}), "all"),
    (
        "same depth: higher ansible_group_priority wins",
        sources(
            {
                "a": {"hosts": {"h": None}, "vars": {"v": "a", "ansible_group_priority": 5}},
                "b": {"hosts": {"h": None}, "vars": {"v": "b"}},
            }
        ),
        "a",
    ),
    (
        "same depth and priority: later name wins",
        sources(
            {"b": {"hosts": {"h": None}, "vars": {"v": "b"}}, "a": {"hosts": {"h": None}, "vars": {"v": "a"}}}
        ),
        "b",
    ),
    (
        "depth is the longest path from all",
        sources(
            {
                "x": {"children": {"y": {"children": {"z": {"hosts": {"h": None}, "vars": {"v": "z"}}}}}},
                "w": {"children": {"z": None}, "vars": {"v": "w"}},
            }
        ),
        "z",
    ),
    (
        "group_vars/all beats a deeper group's inventory vars",
        sources(NESTED, group_vars={"all.yml": {"v": "gv-all"}}),
        "gv-all",
    ),
    (
        "group_vars of a group beats group_vars/all",
        sources(NESTED, group_vars={"all.yml": {"v": "gv-all"}, "parent.yml": {"v": "gv-parent"}}),
        "gv-parent",
    ),
    (
        "group_vars follow the same depth order",
        sources(NESTED, group_vars={"child.yml": {"v": "gv-child"}, "parent.yml": {"v": "gv-parent"}}),
        "gv-child",
    ),
    (
        "inventory host vars beat group_vars",
        sources({"g": {"hosts": {"h": {"v": "inline"}}}}, group_vars={"g.yml": {"v": "gv"}}),
        "inline",
    ),
    (
        "host_vars beat inventory host vars",
        sources({"g": {"hosts": {"h": {"v": "inline"}}}}, host_vars={"h.yml": {"v": "hv"}}),
        "hv",
    ),
    (
        "a later definition of a host's var wins",
        sources({"a": {"hosts": {"h": {"v": 1}}}, "b": {"hosts": {"h": {"v": 2}}}}),
        2,
    ),
    (
        "a later inventory file wins for host vars",
        sources({"a": {"hosts": {"h": {"v": 1}}}}, {"b": {"hosts": {"h": {"v": 3}}}}),
        3,
    ),
    (
        "dicts are replaced, not merged",
        sources({"all": {"vars": {"v": {"a": 1}}}, "g": {"hosts": {"h": None}, "vars": {"v": {"b": 2}}}}),
        {"b": 2},
    ),
    (
        "directory entry: files merge in order",
        sources({"g": {"hosts": {"h": None}}}, group_vars={"g": [{"v": "first"}, {"v": "second"}]}),
        "second",
    ),
    (
        "bare name hides NAME.yml",
        sources({"g": {"hosts": {"h": None}}}, group_vars={"g": [{"v": "dir"}], "g.yml": {"v": "file"}}),
        "dir",
    ),
    (
        "NAME.yml hides NAME.yaml",
        sources({"g": {"hosts": {"h": None}}}, group_vars={"g.yml": {"v": "yml"}, "g.yaml": {"v": "yaml"}}),
        "yml",
    ),
    (
        "priority in a vars file is just a var",
        sources(
            {
                "a": {"hosts": {"h": None}, "vars": {"v": "a"}},
                "b": {"hosts": {"h": None}, "vars": {"v": "b"}},
            },
            group_vars={"a.yml": {"ansible_group_priority": 9}},
        ),
        "b",
    ),
    ("host:port sets ansible_port", sources({"g": {"hosts": {"h:2222": None}}}), 2222),
]


@pytest.mark.parametrize(("src", "expected"), [c[1:] for c in PRECEDENCE], ids=[c[0] for c in PRECEDENCE])
def test_precedence(src: InventorySources, expected: Any) -> None:
    key = "ansible_port" if expected == 2222 else "v"
    assert host_var(src, "h", key) == expected


def test_structure_order_and_ungrouped() -> None:
    inv = resolve(
        sources(
            {
                "all": {
                    "hosts": {"lonely": None, "both": None},
                    "children": {"g": {"hosts": {"both": None, "x[1:2]": None}}},
                },
                "ungrouped": {"hosts": {"x1": None, "stray": None}},
                "top": {"children": "g"},
            },
        )
    ).inventory
    assert list(inv.hosts) == ["lonely", "both", "x1", "x2", "stray"]
    assert inv.groups["ungrouped"].hosts == ("stray", "lonely")  # x1 left it: it is in g
    assert inv.groups["all"].children == ("ungrouped", "g", "top")
    assert inv.hosts["x1"].groups == frozenset({"all", "g", "top"})
    assert inv.hosts["lonely"].groups == frozenset({"all", "ungrouped"})
    assert inv.group_hosts("top") == ["both", "x1", "x2"]


def test_var_origin_names_the_winning_file() -> None:
    inv = resolve(
        sources(NESTED, group_vars={"parent.yml": {"v": "gv"}}, host_vars={"h": [{"w": 1}]})
    ).inventory
    assert inv.var_origin("h", "v") == "group_vars/parent.yml"
    assert inv.var_origin("h", "w") == "host_vars/h/0.yml"


PROBLEMS = [
    ("unknown key", {"g": {"host": {"a": None}}}, "group g: unknown key 'host'"),
    ("bad range", {"g": {"hosts": {"n[5:1]": None}}}, "begin is greater than end"),
    ("hosts is a list", {"g": {"hosts": ["a", "b"]}}, "`hosts` is a list, not a mapping"),
    ("group is a list", {"g": ["a"]}, "group g: the group definition is a list"),
    ("host vars not a mapping", {"g": {"hosts": {"a": "x"}}}, "host a: host vars are the string 'x'"),
    ("numeric host name", {"g": {"hosts": {1: None}}}, "host entry 1 is not a string"),
    ("loop of groups", {"a": {"children": {"b": {"children": {"a": None}}}}}, "creates a loop"),
    ("bad priority", {"g": {"vars": {"ansible_group_priority": "high"}}}, "is not an integer"),
    # YAML's .inf is a float int() cannot convert (OverflowError): found by test_input_properties
    ("infinite priority", {"g": {"vars": {"ansible_group_priority": float("inf")}}}, "is not an integer"),
    ("plugin config", {"plugin": "constructed"}, "plugin configurations are not supported"),
]


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in PROBLEMS], ids=[c[0] for c in PROBLEMS])
def test_structural_problems_name_file_and_object(data: Any, message: str) -> None:
    problems = [str(p) for p in resolve(sources(data)).problems]
    assert any(message in p and p.startswith("f0.yml: ") for p in problems), problems


def test_every_problem_is_reported_not_just_the_first() -> None:
    problems = resolve(sources({"g": {"host": None, "hosts": {"n[2:1]": None}}, "k": ["x"]})).problems
    assert len(problems) == 3


def test_unused_vars_entries_are_warned_about() -> None:
    warnings = [
        str(w)
        for w in resolve(
            sources(
                {"g": {"hosts": {"h": None}}},
                group_vars={"gg.yml": {"a": 1}, "g": [{"a": 1}], "g.yml": {"a": 2}},
            )
        ).warnings
    ]
    assert warnings == [
        "group_vars/gg.yml: no group of that name in the inventory, so Ansible ignores it — check the "
        "spelling against the group names",
        "group_vars/g.yml: ignored: Ansible reads group_vars/g instead — merge the two into one file or "
        "directory",
    ]


def test_a_name_used_for_a_host_and_a_group_is_warned_about() -> None:
    warnings = resolve(sources({"g": {"hosts": {"web": None}}, "web": {"children": {"x": None}}})).warnings
    assert [str(w) for w in warnings] == [
        "f0.yml: group web: is also the name of a host — rename one of them (a host listed under `children:` "
        "becomes a group)"
    ]
