"""Issue 44, D12: every role variable that names an architecture follows the host's `ufc_arch` (amd64 by
default, so the lab's x86_64 nodes are unchanged), and roles/preflight fails, in one line naming the host
and the variable, when the configured architecture is not the host's `uname -m`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import filter_loader, init_plugin_loader
from ansible.template import Templar, trust_as_template

from tests.helpers.ansible_values import trusted

ROOT = Path(__file__).resolve().parents[3]
ROLES = ROOT / "roles"
GROUPS = {"kube_control_plane": ["cp1"], "kube_node": ["npu001"], "npu_node": ["npu001"],
          "registry_cache": ["cache1"]}
ARCH_DEFAULTS = {"kube_node": ["kube_node_arch", "kube_node_download_url", "kube_node_kubectl_download_url",
                               "kube_node_host_arch"],
                 "etcd": ["etcd_tarball_url"], "container_runtime": ["container_runtime_ascend_arch"],
                 "image_preheat": ["image_preheat_platform"]}


def _render(host: str, hostvars: dict[str, dict[str, Any]]) -> dict[str, str]:
    init_plugin_loader()
    variables: dict[str, Any] = {"ufc_artifact_url": "http://m/ufc", "groups": GROUPS, "hostvars": hostvars,
                                 "inventory_hostname": host, **hostvars[host]}
    for role in ARCH_DEFAULTS:
        variables.update(trusted(yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())))
    variables.update(hostvars[host])
    templar = Templar(loader=DataLoader(), variables=variables)
    return {name: str(templar.template(trust_as_template(f"{{{{ {name} }}}}")))
            for names in ARCH_DEFAULTS.values() for name in names}


def test_without_ufc_arch_every_default_is_amd64_as_the_lab_needs() -> None:
    out = _render("npu001", {h: {} for h in ("cp1", "npu001", "cache1")})
    assert out["kube_node_arch"] == "amd64"
    assert out["kube_node_download_url"] == "http://m/ufc/kubernetes/v1.34.4/bin/linux/amd64"
    assert out["kube_node_kubectl_download_url"].endswith("/bin/linux/amd64")
    assert out["kube_node_host_arch"] == "huawei-x86"
    assert out["etcd_tarball_url"] == "http://m/ufc/etcd/etcd-v3.6.17-linux-amd64.tar.gz"
    assert out["container_runtime_ascend_arch"] == "x86_64"
    assert out["image_preheat_platform"] == "linux/amd64"


def test_an_arm64_npu_node_gets_arm64_binaries_and_its_cache_warms_arm64() -> None:
    hostvars = {"cp1": {}, "npu001": {"ufc_arch": "arm64"}, "cache1": {}}
    npu = _render("npu001", hostvars)
    assert npu["kube_node_arch"] == "arm64"
    assert npu["kube_node_download_url"].endswith("/bin/linux/arm64")
    assert npu["kube_node_host_arch"] == "huawei-arm"
    assert npu["etcd_tarball_url"].endswith("-linux-arm64.tar.gz")
    assert npu["container_runtime_ascend_arch"] == "aarch64"  # Ascend-docker-runtime_<v>_linux-aarch64.run
    cache = _render("cache1", hostvars)  # an amd64 host warming for the NPU nodes it serves
    assert cache["image_preheat_platform"] == "linux/arm64"
    assert cache["kube_node_arch"] == "amd64"
    assert _render("cp1", hostvars)["etcd_tarball_url"].endswith("-linux-amd64.tar.gz")


def _preflight_problem(machine: str, hostvars: dict[str, Any], python_problem: str = "") -> str:
    init_plugin_loader()
    filter_loader.add_directory(str(ROLES / "preflight" / "filter_plugins"))
    role_vars = trusted(yaml.safe_load((ROLES / "preflight" / "vars" / "main.yml").read_text()))
    variables = {**role_vars, "inventory_hostname": "npu001", "hostvars": {"npu001": hostvars},
                 "__preflight_python_problem": python_problem,
                 "__preflight_probe": {"probe": {"machine": machine}, "problems": []}}
    templar = Templar(loader=DataLoader(), variables=variables)
    return str(templar.template(trust_as_template("{{ __preflight_arch_problem }}"))).strip()


@pytest.mark.parametrize("machine, hostvars", [
    ("x86_64", {}),
    ("aarch64", {"ufc_arch": "arm64"}),
])
def test_preflight_passes_a_host_of_the_configured_architecture(machine: str, hostvars: dict) -> None:
    assert _preflight_problem(machine, hostvars) == ""


def test_preflight_names_the_host_and_the_variable_in_one_line() -> None:
    line = _preflight_problem("aarch64", {"ufc_arch": "arm64", "kube_node_arch": "amd64"})
    assert line.startswith("npu001 is aarch64 (arm64) but kube_node_arch is amd64: ")
    assert "\n" not in line and "fix: set ufc_arch: arm64 for npu001" in line
    assert _preflight_problem("aarch64", {}).startswith("npu001 is aarch64 (arm64) but ufc_arch is amd64: ")
    assert _preflight_problem("aarch64", {}, python_problem="no python3 found") == ""  # python first


def test_preflight_fails_on_it_before_the_other_problems() -> None:
    tasks = yaml.safe_load((ROLES / "preflight" / "tasks" / "main.yml").read_text())
    names = [t["name"] for t in tasks]
    arch = next(i for i, t in enumerate(tasks) if "__preflight_arch_problem" in str(t.get("when")))
    assert tasks[arch]["ansible.builtin.fail"]["msg"] == "preflight failed: {{ __preflight_arch_problem }}"
    assert names.index("Probe OS, time sync, swap, disk space and listening ports") < arch
    assert arch < names.index("Fail once, listing every problem on this host")
