"""kubeadm preflight checks let through: kube_node_ignore_preflight_errors on the workers' `kubeadm join` and
`kubeadm upgrade node`, kube_control_plane_ignore_preflight_errors on the control planes' `kubeadm upgrade
apply` and `kubeadm upgrade node` (their init and join carry it in nodeRegistration). kubeadm 1.35 refuses a
cgroup v1 host in SystemVerification: the container lab, on such a host, lets that one check through on
every node; the roles' defaults let nothing through.

The argv expressions are the roles' own, rendered with Ansible's Templar."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar

from tests.helpers.ansible_values import trusted
from ufcctl.lab import inventory as lab_inventory
from ufcctl.lab.layout import plan_layout

ROOT = Path(__file__).resolve().parents[3]
FLAG = "--ignore-preflight-errors=SystemVerification"


@pytest.fixture(scope="module", autouse=True)
def _plugins() -> None:
    init_plugin_loader()


def _yaml(relative: str) -> Any:
    return yaml.safe_load((ROOT / relative).read_text())


def _walk(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for item in items or []:
        if any(k in item for k in ("block", "rescue", "always")):
            for key in ("block", "rescue", "always"):
                yield from _walk(item.get(key))
        else:
            yield item


def _argv(relative: str, name_start: str, variables: dict[str, Any]) -> list[str]:
    task = next(t for t in _walk(_yaml(relative)) if t.get("name", "").startswith(name_start))
    argv = task["ansible.builtin.command"]["argv"]
    rendered = Templar(loader=DataLoader(), variables=trusted(variables)).template(trusted(argv))
    return [str(a) for a in rendered]


def _join(**variables: Any) -> list[str]:
    return _argv("roles/kube_node/tasks/main.yml", "Join the cluster",
                 {**_yaml("roles/kube_node/defaults/main.yml"),
                  "__kube_node_join_file": "/etc/kubernetes/ufcctl/join.yaml", **variables})


def _node_upgrade(**variables: Any) -> list[str]:
    return _argv("roles/kube_node/tasks/upgrade.yml", "Upgrade the node's configuration",
                 {**_yaml("roles/kube_node/defaults/main.yml"), **variables})


def _plane_upgrade(host: str, **variables: Any) -> list[str]:
    return _argv("roles/kube_control_plane/tasks/upgrade.yml", "Upgrade the control plane",
                 {**_yaml("roles/kube_control_plane/defaults/main.yml"), "inventory_hostname": host,
                  "__kube_control_plane_first": "cp1", "__kube_control_plane_upgrade_target": "v1.35.4",
                  **variables})


def test_the_defaults_let_no_preflight_check_through() -> None:
    assert _yaml("roles/kube_node/defaults/main.yml")["kube_node_ignore_preflight_errors"] == []
    assert _join() == ["kubeadm", "join", "--config", "/etc/kubernetes/ufcctl/join.yaml"]
    assert _node_upgrade() == ["kubeadm", "upgrade", "node"]
    assert _plane_upgrade("cp1") == ["kubeadm", "upgrade", "apply", "v1.35.4", "--yes"]
    assert _plane_upgrade("cp2") == ["kubeadm", "upgrade", "node"]


def test_the_workers_join_and_upgrade_carry_the_flag_when_set() -> None:
    checks = ["SystemVerification", "Swap"]
    assert _join(kube_node_ignore_preflight_errors=checks) == [
        "kubeadm", "join", "--config", "/etc/kubernetes/ufcctl/join.yaml",
        "--ignore-preflight-errors=SystemVerification,Swap"]
    assert _node_upgrade(kube_node_ignore_preflight_errors=checks) == [
        "kubeadm", "upgrade", "node", "--ignore-preflight-errors=SystemVerification,Swap"]
    # the control planes' list is not the workers'
    assert _join(kube_control_plane_ignore_preflight_errors=checks) == [
        "kubeadm", "join", "--config", "/etc/kubernetes/ufcctl/join.yaml"]


def test_every_control_planes_upgrade_carries_the_flag_when_set() -> None:
    checks = {"kube_control_plane_ignore_preflight_errors": ["SystemVerification"]}
    assert _plane_upgrade("cp1", **checks) == ["kubeadm", "upgrade", "apply", "v1.35.4", "--yes", FLAG]
    assert _plane_upgrade("cp2", **checks) == ["kubeadm", "upgrade", "node", FLAG]


def test_the_lab_lets_system_verification_through_on_every_node() -> None:
    """The lab's host is on cgroup v1 (its kubelets get failCgroupV1: false); kubeadm 1.35 refuses it in
    SystemVerification, on the control planes (init, join, upgrade) and the workers (join, upgrade node)."""
    lab = lab_inventory.cluster_vars(plan_layout("t", 2, "10.89.71.0/24"))
    assert lab["kube_control_plane_kubelet_fail_cgroup_v1"] is False
    assert lab["kube_control_plane_ignore_preflight_errors"] == ["SystemVerification"]
    assert lab["kube_node_ignore_preflight_errors"] == ["SystemVerification"]
    assert _join(**lab)[-1] == FLAG
    assert _node_upgrade(**lab)[-1] == FLAG
    assert _plane_upgrade("cp2", **lab)[-1] == FLAG
