"""engine/run_inventory.py: the generated inventory of one run (written 0600, read back as Ansible
reads JSON-as-YAML) and the --limit that keeps context hosts out of every play."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from ufcctl.domain.inventory.model import Host
from ufcctl.engine.run_inventory import context_limit, write_inventory


def _host(name: str, *groups: str, **vars: object) -> Host:
    return Host(name=name, vars=vars, groups=frozenset({*groups, "all"}))


def test_write_inventory_is_private_and_holds_the_given_hosts_in_order(tmp_path: Path) -> None:
    path = tmp_path / "run" / "inventory" / "hosts.json"
    write_inventory(path, [_host("w2", "kube_node", x=1), _host("cp1", "kube_control_plane"), _host("w1")])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert list(data["all"]["hosts"]) == ["w2", "cp1", "w1"]
    assert data["all"]["hosts"]["w2"] == {"x": 1}
    assert data["all"]["children"] == {"kube_control_plane": {"hosts": {"cp1": None}},
                                       "kube_node": {"hosts": {"w2": None}}}


def test_write_inventory_replaces_an_earlier_one(tmp_path: Path) -> None:
    path = tmp_path / "hosts.json"
    write_inventory(path, [_host(f"n{i}") for i in range(50)])
    write_inventory(path, [_host("only")])
    assert list(json.loads(path.read_text())["all"]["hosts"]) == ["only"]


@pytest.mark.parametrize(("limit", "context", "expected"), [
    pytest.param(None, [], None, id="no-context-no-limit"),
    pytest.param("n0*", [], "n0*", id="no-context-keeps-the-limit"),
    pytest.param(None, ["cp1", "lb1"], "all,!cp1,!lb1", id="context-excluded"),
])
def test_context_limit(limit: str | None, context: list[str], expected: str | None) -> None:
    assert context_limit(limit, context) == expected


def test_context_limit_refuses_a_pattern_beside_context_hosts() -> None:
    with pytest.raises(ValueError, match="no --limit pattern"):
        context_limit("a:&b", ["cp1"])
