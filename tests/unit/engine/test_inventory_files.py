"""Reading an inventory directory: which files count, parse errors with file and line, YAML tags."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from ufcctl.domain.inventory.values import UnsafeText, VaultedValue, to_ansible_json
from ufcctl.engine.inventory_files import read_inventory_dir
from ufcctl.engine.yaml_loader import load_yaml


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_files_are_read_in_ansible_order_and_ignored_ones_skipped(tmp_path: Path) -> None:
    src = read_inventory_dir(
        write(
            tmp_path,
            {
                "b.yml": "g: {}\n",
                "a.yaml": "g: {}\n",
                "sub/c.json": '{"g": {}}',
                "README.md": "x",
                "ansible.cfg": "[defaults]\n",
                ".hidden.yml": "g: {}\n",
                "noext": "g: {}\n",
                "known_hosts": "h ssh-ed25519 AAA\n",
                "group_vars/all/2.yml": "a: 2\n",
                "group_vars/all/1.yml": "a: 1\n",
                "group_vars/all/x.txt": "a: 3\n",
                "group_vars/all/deeper/3": "a: 4\n",
                "group_vars/g.yaml": "b: 1\n",
                "group_vars/notes.md": "not yaml: [",
                "host_vars/node1.example.com": "c: 1\n",
            },
        )
    )
    assert [f.path for f in src.inventory_files] == ["a.yaml", "b.yml", "noext", "sub/c.json"]
    assert [f.path for f in src.group_vars["all"].files] == [
        "group_vars/all/1.yml",
        "group_vars/all/2.yml",
        "group_vars/all/deeper/3",
    ]
    assert set(src.group_vars) == {"all", "g.yaml"}
    assert src.host_vars["node1.example.com"].files[0].data == {"c": 1}
    assert src.problems == ()
    assert [str(w).split(":")[0] for w in src.warnings] == ["known_hosts"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "all:\n  hosts:\n    a:\n   b: 1\n", "hosts.yml:4:4: invalid YAML", id="bad indentation"
        ),
        pytest.param("all: {hosts: [\n", "hosts.yml:2:1: invalid YAML", id="unclosed flow"),
        pytest.param(
            "$ANSIBLE_VAULT;1.1;AES256\n6162\n", "hosts.yml: the file is vault-encrypted", id="vault file"
        ),
    ],
)
def test_parse_errors_name_file_and_line(tmp_path: Path, text: str, expected: str) -> None:
    src = read_inventory_dir(write(tmp_path, {"hosts.yml": text, "group_vars/all.yml": "a: [\n"}))
    problems = [str(p) for p in src.problems]
    assert any(p.startswith(expected) for p in problems), problems
    assert any(p.startswith("group_vars/all.yml:2:1: invalid YAML") for p in problems), problems  # every file


@pytest.mark.parametrize("name,text", [("hosts.ini", "[g]\nh1\n"), ("inv", "[kube_node]\nn1\n")])
def test_ini_inventories_are_refused(tmp_path: Path, name: str, text: str) -> None:
    src = read_inventory_dir(write(tmp_path, {name: text}))
    assert "ufcctl reads YAML inventories only" in str(src.problems[0])


def test_script_inventories_are_refused(tmp_path: Path) -> None:
    write(tmp_path, {"inventory.py": "#!/usr/bin/env python3\n"})
    os.chmod(tmp_path / "inventory.py", 0o755)
    assert "YAML inventories only" in str(read_inventory_dir(tmp_path).problems[0])


def test_empty_directory_is_a_problem(tmp_path: Path) -> None:
    assert "no inventory file found" in str(read_inventory_dir(tmp_path).problems[0])


def test_ansible_tags_are_kept(tmp_path: Path) -> None:
    data = load_yaml(
        "a: !unsafe '{{ x }}'\nb: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\nc: !unsafe [x, 1]\n"
    )
    assert isinstance(data["a"], UnsafeText) and data["a"] == "{{ x }}"
    assert data["b"] == VaultedValue("$ANSIBLE_VAULT;1.1;AES256\n6162\n")
    assert to_ansible_json(data) == {
        "a": {"__ansible_unsafe": "{{ x }}"},
        "b": {"__ansible_vault": "$ANSIBLE_VAULT;1.1;AES256\n6162\n"},
        "c": [{"__ansible_unsafe": "x"}, 1],
    }


SAMPLES = [
    "a: yes\nb: No\nc: 0o17\nd: 017\ne: 0x1F\nf: 1_000\ng: 1:30\nh: .inf\ni: ~\nj: ''\n",
    "k: 2024-01-02\nl: 1e3\nm: 2024-01-02 10:00:00\nn: !!binary aGk=\no: !!set {a, b}\n",
    "x: &anchor {a: [1, 2]}\ny: *anchor\nz:\n  <<: *anchor\n  b: 3\n",
    "- plain\n- 'quoted yes'\n- !!str 12\n- !!int '7'\n- [nested, {k: v}]\n- null\n- -1.5\n- +3\n",
    "? [complex, key]\n: no\n",
    "npu00001: {ansible_host: 10.0.0.1, rack: r1, tor: tor-1, on: off, n: NULL}\n",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_loader_gives_what_safe_load_gives(text: str) -> None:
    try:
        expected = yaml.safe_load(text)
    except yaml.YAMLError as err:
        with pytest.raises(yaml.YAMLError):
            load_yaml(text)
        assert err
        return
    assert load_yaml(text) == expected


def test_aliases_are_the_same_object() -> None:
    data = load_yaml("x: &a {k: [1]}\ny: *a\n")
    assert data["x"] is data["y"]
