"""Issue 44, D12: one architecture variable, `ufc_arch` (amd64 or arm64, per host, default amd64), that
every role variable naming an architecture follows; `ufcctl inventory check` refuses a value that is not
one of the two or an override that disagrees with it, and roles/preflight a host whose `uname -m` is not
the configured one (ufcctl/domain/inventory/arch.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.unit.domain.test_inventory_validate import base, check, children
from ufcctl.domain.addons.labels import node_labels
from ufcctl.domain.inventory.arch import arch_of_machine, host_mismatch

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("machine, values", [
    ("x86_64", {}),  # the default: amd64, as the lab's nodes
    ("x86_64", {"ufc_arch": "amd64", "kube_node_arch": "amd64", "container_runtime_ascend_arch": "x86_64"}),
    ("aarch64", {"ufc_arch": "arm64"}),
    ("aarch64", {"ufc_arch": "arm64", "etcd_tarball_url": "http://m/etcd/etcd-v3.6.17-linux-arm64.tar.gz"}),
    ("aarch64", {"ufc_arch": "arm64", "etcd_tarball_url": "http://m/etcd/etcd.tgz"}),  # names no arch
])
def test_an_architecture_that_is_the_hosts_passes(machine: str, values: dict[str, Any]) -> None:
    assert host_mismatch("npu001", machine, values) == ""


@pytest.mark.parametrize("machine, values, named", [
    # a Kunpeng Atlas A2 server with the amd64 default: kubeadm would fail with "exec format error"
    ("aarch64", {}, ["ufc_arch is amd64"]),
    ("aarch64", {"ufc_arch": "arm64", "kube_node_arch": "amd64"}, ["kube_node_arch is amd64"]),
    ("aarch64", {"ufc_arch": "arm64", "container_runtime_ascend_arch": "x86_64"},
     ["container_runtime_ascend_arch is amd64"]),
    ("aarch64", {"ufc_arch": "arm64", "etcd_tarball_url": "http://m/etcd/etcd-v3.6.17-linux-amd64.tar.gz"},
     ["etcd_tarball_url is amd64"]),
    ("x86_64", {"ufc_arch": "arm64", "kube_node_arch": "arm64"},
     ["ufc_arch is arm64", "kube_node_arch is arm64"]),
    ("aarch64", {"ufc_arch": "aarch64"}, ["ufc_arch is aarch64"]),  # uname's name, not Kubernetes'
])
def test_a_configured_architecture_other_than_the_hosts_is_one_line_naming_host_and_variables(
        machine: str, values: dict[str, Any], named: list[str]) -> None:
    line = host_mismatch("npu001", machine, values)
    actual = arch_of_machine(machine)
    assert line.startswith(f"npu001 is {machine} ({actual}) but ")
    assert "\n" not in line
    for part in named:
        assert part in line
    assert f"-> fix: set ufc_arch: {actual} for npu001" in line


def test_a_machine_without_binaries_is_named() -> None:
    assert host_mismatch("n1", "ppc64le", {}) == (
        "n1 is ppc64le: ufcctl fetches binaries for amd64 (x86_64) and arm64 (aarch64) only")


def _npu_vars(**values: Any) -> dict[str, Any]:
    data = base()
    children(data)["kube_node"]["children"]["npu_node"]["vars"].update(values)
    return data


def test_inventory_check_takes_arm64_npu_nodes_beside_amd64_control_planes() -> None:
    assert check(_npu_vars(ufc_arch="arm64")) == ([], [])
    explicit = _npu_vars(ufc_arch="arm64", kube_node_arch="arm64", container_runtime_ascend_arch="aarch64")
    assert check(explicit) == ([], [])


@pytest.mark.parametrize("values, message", [
    ({"ufc_arch": "aarch64"}, "ufc_arch 'aarch64' is not amd64 or arm64 (that is arm64 in Kubernetes' name)"),
    ({"ufc_arch": "arm"}, "ufc_arch 'arm' is not amd64 or arm64 —"),
    ({"ufc_arch": "arm64", "kube_node_arch": "amd64"},
     "kube_node_arch 'amd64' names amd64, but ufc_arch is arm64"),
    ({"kube_node_arch": "arm64"}, "kube_node_arch 'arm64' names arm64, but ufc_arch is amd64"),
    ({"ufc_arch": "arm64", "container_runtime_ascend_arch": "x86_64"},
     "container_runtime_ascend_arch 'x86_64' names amd64, but ufc_arch is arm64 — remove "
     "container_runtime_ascend_arch (it follows ufc_arch: aarch64)"),
])
def test_inventory_check_refuses_an_unknown_or_contradicting_architecture(values: dict[str, Any],
                                                                           message: str) -> None:
    problems, _ = check(_npu_vars(**values))
    assert len(problems) == 1 and problems[0].startswith("hosts.yml: hosts npu[1:4]: "), problems
    assert message in problems[0]


def test_ufcctl_inventory_check_exits_2_on_a_bad_architecture(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from ufcctl.cli.main import cli

    inventory = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories" / "sample", inventory)
    (inventory / "group_vars" / "all" / "arch.yml").write_text("ufc_arch: aarch64\n")
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    result = CliRunner().invoke(cli, ["inventory", "check", "--inventory", str(inventory)])
    assert result.exit_code == 2, result.output
    assert "ufc_arch 'aarch64' is not amd64 or arm64" in result.output


@pytest.mark.parametrize("values, label", [
    ({"ufc_arch": "amd64"}, "huawei-x86"),
    ({"ufc_arch": "arm64"}, "huawei-arm"),
    ({}, "huawei-arm"),  # the add-on's default (ascend_components_host_arch)
    ({"ufc_arch": "amd64", "npu_host_arch": "huawei-arm"}, "huawei-arm"),  # npu_host_arch first
])
def test_the_host_arch_label_follows_ufc_arch(values: dict[str, Any], label: str) -> None:
    assert node_labels(values, False, True, "huawei-arm")["host-arch"] == label
