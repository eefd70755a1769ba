"""`ufcctl inventory check|show` through click: exit codes, messages, JSON."""

from __future__ import annotations

import inspect
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from ufcctl.cli.main import cli
from ufcctl.paths import SAMPLE_INVENTORY

SAMPLE = SAMPLE_INVENTORY


@pytest.fixture()
def broken(tmp_path: Path) -> Path:
    inv = tmp_path / "inv"
    shutil.copytree(SAMPLE, inv)
    hosts = (inv / "hosts.yml").read_text()
    hosts = hosts.replace("etcd-pods[1:3]:", "etcd-pods[1:4]:").replace("module-910b-8", "module-910x")
    (inv / "hosts.yml").write_text(hosts)
    (inv / "host_vars" / "cp3.yml").write_text("ansible_host: 10.0.0.11\n")
    return inv


# click 8.1 mixes stderr into stdout unless told not to; 8.2 removed the flag and always separates.
_SEPARATE = {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters else {}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner(**_SEPARATE).invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_check_sample_by_name() -> None:
    code, out, _ = run("inventory", "check", "--inventory", "sample")
    assert code == 0
    assert out.startswith("inventory ") and "OK — 25 hosts" in out


def test_check_lists_every_problem_and_exits_2(broken: Path) -> None:
    code, _, err = run("inventory", "check", "--inventory", str(broken))
    assert code == 2
    lines = err.splitlines()
    assert lines[0] == f"Error: inventory {broken}: 3 problems"
    assert (
        f"  - {broken}/hosts.yml: group etcd_pods: has 4 members; etcd needs an odd count to keep a majority"
        " — use 3 or 5 members" in lines
    )
    assert any(
        line.startswith(f"  - {broken}/host_vars/cp3.yml: host cp3: address 10.0.0.11 is also host cp1's")
        for line in lines
    )
    assert any(
        "hosts npu[009:016]: npu_accelerator_type 'module-910x' is not a known type" in line for line in lines
    )
    assert lines[-1].startswith("Hint: nothing was contacted")


def test_check_json(broken: Path) -> None:
    code, out, _ = run("inventory", "check", "-i", str(broken), "--output", "json")
    assert code == 2
    data = json.loads(out)
    assert data["valid"] is False and data["hosts"] == 26 and len(data["problems"]) == 3
    assert {p["subject"] for p in data["problems"]} == {"group etcd_pods", "host cp3", "hosts npu[009:016]"}


def test_check_unparsable_file_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "hosts.yml").write_text("all:\n  children:\n    g: [\n")
    code, _, err = run("inventory", "check", "-i", str(tmp_path))
    assert code == 2 and f"{tmp_path}/hosts.yml:4:1: invalid YAML" in err


def test_unknown_inventory_name() -> None:
    code, _, err = run("inventory", "check", "-i", "no-such-inventory")
    assert code == 2 and "Error: inventory 'no-such-inventory': no such directory" in err


def test_show_json_counts() -> None:
    code, out, _ = run("inventory", "show", "-i", "sample", "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert data["hosts"] == 25 and data["npu_nodes"] == 16
    assert data["groups"]["slice_1"] == {"hosts": 4, "members": ["npu[002:014:4]"], "children": []}
    assert data["topology"]["tors"] == {"tor-01": 4, "tor-02": 4, "tor-03": 4, "tor-04": 4}
    assert data["topology"]["accelerator_types"] == {"module-a3-16-super-pod": 8, "module-910b-8": 8}
    assert data["npu_nodes_without"]["super_pods"] == 8


def test_show_text() -> None:
    code, out, _ = run("inventory", "show", "-i", "sample")
    assert code == 0
    assert "25 hosts, 16 NPU nodes" in out and "npu[001:008]" in out and "tor-04" in out


def test_show_refuses_a_broken_inventory(broken: Path) -> None:
    code, _, err = run("inventory", "show", "-i", str(broken))
    assert code == 2 and "3 problems" in err


@pytest.mark.parametrize("style", ["ranges", "explicit"])
def test_generated_cluster_inventories_are_valid(tmp_path: Path, style: str) -> None:
    inv = write_cluster_inventory(tmp_path / style, ClusterShape(npu_nodes=320), style=style)
    code, out, err = run("inventory", "check", "-i", str(inv))
    assert (code, err) == (0, "") and "327 hosts" in out


def test_show_folds_families_of_groups(tmp_path: Path) -> None:
    inv = write_cluster_inventory(tmp_path / "inv", ClusterShape(npu_nodes=320))
    code, out, _ = run("inventory", "show", "-i", str(inv))
    assert code == 0
    assert "tor_[0001:0020] [20 groups]" in out and "tor_0002 " not in out
    assert "rack (rack): 40 distinct, hosts each: min 8, max 8" in out
