"""etcd ports come from one table, domain/etcd/topology.py CLUSTER_KINDS: inventory validation derives
its defaults from it, the roles' defaults are checked against it, and no other code writes the numbers."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ufcctl.domain.etcd.inventory_rules import ETCD_DEFAULT_PORTS
from ufcctl.domain.etcd.topology import CLUSTER_KINDS

ROOT = Path(__file__).resolve().parents[3]
PORT = re.compile(r"\b23(79|8[0-7])\b")
# Files that may write the numbers, and what keeps them equal to CLUSTER_KINDS.
ALLOWED = {
    "ufcctl/domain/etcd/topology.py": "the table itself",
    "roles/etcd/defaults/main.yml": "test_etcd_role.py (test_role_ports_match_the_python_topology)",
    "roles/etcd/meta/argument_specs.yml": "test_role_consistency.py (spec defaults equal role defaults)",
    "roles/preflight/defaults/main.yml": "test_preflight_port_defaults_follow_the_table below",
}


def test_inventory_validation_defaults_are_the_table() -> None:
    assert ETCD_DEFAULT_PORTS == {k.group: (k.client_port, k.peer_port) for k in CLUSTER_KINDS}


def test_preflight_port_defaults_follow_the_table() -> None:
    entries = yaml.safe_load((ROOT / "roles/preflight/defaults/main.yml").read_text())["preflight_ports"]
    found = {}
    pattern = re.compile(r"\{\{ etcd_(\w+)_(client|peer|metrics)_port \| default\((\d+)\) \}\}")
    for entry in entries:
        match = pattern.fullmatch(str(entry["port"]))
        if match:
            found[(match.group(1), match.group(2))] = int(match.group(3))
    expected = {
        (k.name, role): port
        for k in CLUSTER_KINDS
        for role, port in (("client", k.client_port), ("peer", k.peer_port), ("metrics", k.metrics_port))
    }
    assert found == expected


def test_no_other_code_writes_an_etcd_port() -> None:
    files = [*ROOT.glob("ufcctl/**/*.py"), *ROOT.glob("roles/**/*.y*ml"), *ROOT.glob("roles/**/*.j2"),
             *ROOT.glob("roles/**/*.py"), *ROOT.glob("playbooks/*.yml")]
    wrong = []
    for path in files:
        name = str(path.relative_to(ROOT))
        if name in ALLOWED:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if PORT.search(line) and not line.lstrip().startswith("#"):  # comments may explain
                wrong.append(f"{name}:{number}: {line.strip()}")
    assert wrong == [], "take the port from CLUSTER_KINDS (or the role's etcd_<cluster>_*_port variable)"


def test_the_scan_finds_the_table() -> None:
    assert PORT.search((ROOT / "ufcctl/domain/etcd/topology.py").read_text())
