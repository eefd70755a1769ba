"""Differential test: ufcctl resolves hosts, groups and vars exactly as `ansible-inventory --list` does.

docs/architecture.md decision 2: ufcctl reads the inventory itself so Ansible never loads 16,000 hosts;
this test is what makes that safe. Each case runs the real ansible-inventory (from the venv
running the tests) on the same directory and compares every host's merged vars, each group's
direct hosts and children (in order), and every host's full group membership.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory, write_messy_inventory
from ufcctl.domain.inventory.model import Inventory
from ufcctl.domain.inventory.resolve import resolve
from ufcctl.domain.inventory.values import to_ansible_json
from ufcctl.engine.inventory_files import read_inventory_dir
from ufcctl.paths import SAMPLE_INVENTORY

ANSIBLE_INVENTORY = shutil.which("ansible-inventory", path=os.path.dirname(sys.executable))
pytestmark = pytest.mark.skipif(
    ANSIBLE_INVENTORY is None, reason=f"ansible-inventory not installed beside {sys.executable}"
)


def ansible_list(directory: Path, work: Path) -> dict[str, Any]:
    """`ansible-inventory -i DIR --list` with no ansible.cfg and no ANSIBLE_* settings in effect."""
    work.mkdir(parents=True, exist_ok=True)
    config = work / "ansible.cfg"
    config.write_text("[defaults]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(config), ANSIBLE_LOCAL_TEMP=str(work / "tmp"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(
        [str(ANSIBLE_INVENTORY), "-i", str(directory), "--list"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Unable to parse" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def differences(ours: Inventory, theirs: dict[str, Any]) -> list[str]:
    """Every way the two views disagree (empty when they are the same)."""
    diffs: list[str] = []
    groups = {name: body for name, body in theirs.items() if name != "_meta"}
    # Hosts and their merged vars (ansible-inventory omits hosts whose vars are empty).
    their_vars = theirs["_meta"]["hostvars"]
    their_hosts = set(their_vars) | {h for body in groups.values() for h in body.get("hosts", [])}
    if their_hosts != set(ours.hosts):
        diffs.append(
            f"hosts only in Ansible: {sorted(their_hosts - set(ours.hosts))[:5]}, "
            f"only in ufcctl: {sorted(set(ours.hosts) - their_hosts)[:5]}"
        )
    for name, host in ours.hosts.items():
        mine = to_ansible_json(host.vars)
        if mine != their_vars.get(name, {}):
            other = their_vars.get(name, {})
            keys = sorted(k for k in set(mine) | set(other) if mine.get(k) != other.get(k))
            diffs.append(
                f"vars of {name} differ in {keys}: ufcctl {[mine.get(k) for k in keys]} "
                f"ansible {[other.get(k) for k in keys]}"
            )
    # Groups: direct hosts and children, in order (Ansible drops groups with neither).
    for name, group in ours.groups.items():
        body = groups.get(name, {})
        if name != "all" and list(group.hosts) != body.get("hosts", []):
            diffs.append(f"group {name}: hosts {list(group.hosts)[:5]}... vs {body.get('hosts', [])[:5]}...")
        if list(group.children) != body.get("children", []):
            diffs.append(f"group {name}: children {list(group.children)} vs {body.get('children', [])}")
    diffs += [f"group {name} only in Ansible" for name in groups if name not in ours.groups]
    # Full membership: direct groups plus all their ancestors, plus `all`.
    parents: dict[str, set[str]] = {}
    for name, body in groups.items():
        for child in body.get("children", []):
            parents.setdefault(child, set()).add(name)
    direct: dict[str, set[str]] = {}
    for name, body in groups.items():
        for h in body.get("hosts", []):
            direct.setdefault(h, set()).add(name)
    for name, host in ours.hosts.items():
        todo, member = list(direct.get(name, ())), {"all"}
        while todo:
            group = todo.pop()
            if group not in member:
                member.add(group)
                todo.extend(parents.get(group, ()))
        if member != set(host.groups):
            diffs.append(f"groups of {name}: ufcctl {sorted(host.groups)} ansible {sorted(member)}")
    return diffs


CASES: dict[str, Callable[[Path], Path]] = {
    "sample": lambda tmp: SAMPLE_INVENTORY,
    "messy-2000-hosts-seed-1": lambda tmp: write_messy_inventory(tmp / "inv", seed=1, hosts=2000),
    "messy-600-hosts-seed-7": lambda tmp: write_messy_inventory(tmp / "inv", seed=7, hosts=600),
    "cluster-2000-npu-ranges": lambda tmp: write_cluster_inventory(tmp / "inv", ClusterShape(npu_nodes=2000)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_ufcctl_resolves_like_ansible_inventory(case: str, tmp_path: Path) -> None:
    directory = CASES[case](tmp_path)
    resolution = resolve(read_inventory_dir(directory))
    assert resolution.problems == ()
    theirs = ansible_list(directory, tmp_path / "work")
    diffs = differences(resolution.inventory, theirs)
    assert not diffs, f"{len(diffs)} differences, first ones:\n" + "\n".join(diffs[:15])
    assert len(resolution.inventory.hosts) > (20 if case == "sample" else 500)


def test_the_comparison_catches_a_difference(tmp_path: Path) -> None:
    """The comparison can fail: one changed var, one moved host and one lost child are all reported."""
    directory = SAMPLE_INVENTORY
    theirs = ansible_list(directory, tmp_path / "work")
    theirs["_meta"]["hostvars"]["cp1"]["ufc_vip"] = "10.9.9.9"
    theirs["tor_01"]["hosts"].remove("npu001")
    theirs["super_pod_0"]["children"].remove("tor_02")
    diffs = differences(resolve(read_inventory_dir(directory)).inventory, theirs)
    assert any(d.startswith("vars of cp1 differ in ['ufc_vip']") for d in diffs)
    assert any(d.startswith("group tor_01: hosts") for d in diffs)
    assert any(d.startswith("groups of npu001") for d in diffs)
    assert any(d.startswith("group super_pod_0: children") for d in diffs)


def test_jinja_and_unsafe_values_come_back_unrendered(tmp_path: Path) -> None:
    """Neither side templates: "{{ x }}" stays a string; `!unsafe` keeps its mark in both outputs."""
    directory = tmp_path / "inv"
    directory.mkdir()
    (directory / "hosts.yml").write_text(
        "all:\n  vars:\n    t: '{{ undefined_var | default(1) }}'\n    u: !unsafe '{{ raw }}'\n"
        "  hosts:\n    h1:\n"
    )
    theirs = ansible_list(directory, tmp_path / "work")
    assert theirs["_meta"]["hostvars"]["h1"] == {
        "t": "{{ undefined_var | default(1) }}",
        "u": {"__ansible_unsafe": "{{ raw }}"},
    }
    ours = resolve(read_inventory_dir(directory)).inventory
    assert to_ansible_json(ours.hosts["h1"].vars) == theirs["_meta"]["hostvars"]["h1"]
