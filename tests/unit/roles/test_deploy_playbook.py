"""playbooks/deploy.yml parses with the repository's ansible.cfg; preflight, then node_tuning, come first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "playbooks" / "deploy.yml"
GROUPS = [
    "kube_control_plane", "etcd_core", "etcd_events", "etcd_pods", "kube_node", "npu_node",
    "nfs_server", "apiserver_lb", "registry_cache",
]


def test_syntax_check_with_every_group_present(tmp_path):
    # One host per group, never contacted: --syntax-check only parses and resolves roles.
    groups = {g: {"hosts": {f"{g}-1": {"ansible_connection": "local"}}} for g in GROUPS}
    inventory = {"all": {"children": groups}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "--syntax-check",
         "-i", str(tmp_path / "hosts.yml"), str(DEPLOY)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_preflight_then_node_tuning_run_first_on_every_host():
    plays = yaml.safe_load(DEPLOY.read_text())
    first = [
        (play["hosts"], [r["role"] if isinstance(r, dict) else r for r in play.get("roles", [])])
        for play in plays[:2]
    ]
    assert first == [("all", ["preflight"]), ("all", ["node_tuning"])]
    assert [play.get("gather_facts") for play in plays[:2]] == [False, False], "roles gather what they read"
