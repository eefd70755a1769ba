"""Issue 26's defects D4, D6 and D7, checked on the roles' own variables, tasks and modules (Templar):

- D4: net.ipv4.ip_forward (and br_netfilter with bridge-nf-call-iptables/ip6tables) were set nowhere, so
  kubeadm's preflight would refuse init and join (FileContent--proc-sys-net-ipv4-ip_forward) and Calico in
  iptables mode would miss bridged traffic. node_tuning now sets them on every Kubernetes node.
- D6: every package task is apt/dpkg, but preflight accepted openEuler, EulerOS and Kylin: such a host failed
  mid-deploy. preflight now refuses an OS family the roles cannot install on, naming the host, its OS and
  the supported list.
- D7: the default etcd (`etcd_install_method: package`) was Debian's 3.4.23, which kubeadm 1.31's
  ExternalEtcdVersion check refuses (>= 3.5.11). The default is now a checksum-verified 3.5 release tarball,
  and a packaged etcd older than that is refused unless the inventory says otherwise (the lab only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar

from tests.helpers.ansible_values import trusted
from tests.helpers.pyimports import load_file
from ufcctl.lab import inventory as lab_inventory
from ufcctl.lab.layout import LabLayout, plan_layout

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module", autouse=True)
def _plugins() -> None:
    init_plugin_loader()


def _yaml(relative: str) -> Any:
    return yaml.safe_load((ROOT / relative).read_text())


def _lab() -> LabLayout:
    return plan_layout("t", 2, "10.89.71.0/24")


def _render(expression: Any, variables: dict[str, Any]) -> Any:
    return Templar(loader=DataLoader(), variables=trusted(variables)).template(trusted(expression))


# -- D4 ------------------------------------------------------------------------------------------


def _node_tuning_task() -> dict[str, Any]:
    return _yaml("roles/node_tuning/tasks/main.yml")[0]


@pytest.mark.parametrize(("groups", "kube"), [(["kube_control_plane", "etcd_core"], True),
                                              (["kube_node", "npu_node"], True), (["etcd_core"], False),
                                              (["apiserver_lb", "nfs_server"], False)])
def test_d4_kube_nodes_get_ip_forward_and_bridge_netfilter(groups: list[str], kube: bool) -> None:
    task = _node_tuning_task()
    variables = {**_yaml("roles/node_tuning/defaults/main.yml"), **task.get("vars", {}),
                 "group_names": groups}
    module_args = task["node_tuning_sysctl"]
    settings = _render(module_args["settings"], variables)
    modules = _render(module_args.get("modules", "{{ [] }}"), variables)
    wanted = {"net.ipv4.ip_forward": 1, "net.bridge.bridge-nf-call-iptables": 1,
              "net.bridge.bridge-nf-call-ip6tables": 1}
    if kube:
        assert {k: settings.get(k) for k in wanted} == wanted, settings
        assert modules == ["br_netfilter"]
    persist = _yaml("roles/node_tuning/tasks/main.yml")[1]  # ufc_files: the files boot reads
    files = _render(persist["ufc_files"]["files"], {**variables, **persist.get("vars", {})})
    dests = [f["dest"] for f in files]
    if kube:
        assert dests == ["/etc/sysctl.d/90-ufcctl.conf", "/etc/modules-load.d/90-ufcctl.conf"]
    else:
        assert not set(wanted) & set(settings) and modules == []
        assert dests == ["/etc/sysctl.d/90-ufcctl.conf"]
    assert "net.core.somaxconn" in settings  # the profile itself is still there


def test_d4_the_lab_skips_modprobe_only() -> None:
    """Lab containers cannot load modules; the keys stay in the profile (reported skipped if absent)."""
    variables = lab_inventory.cluster_vars(_lab())
    assert variables["node_tuning_load_modules"] is False
    assert "node_tuning_kube_sysctl" not in variables and "node_tuning_kube_modules" not in variables


# -- D6 ------------------------------------------------------------------------------------------

probe = load_file(ROOT / "roles" / "preflight" / "library" / "preflight_probe.py")


def _families() -> list[dict[str, Any]]:
    return _yaml("roles/preflight/vars/main.yml")["__preflight_os_families"]


@pytest.mark.parametrize(("name", "version", "family", "ok"), [
    ("Debian", "12.8", "Debian", True), ("Ubuntu", "24.04", "Debian", True),
    ("openEuler", "22.03", "RedHat", False), ("EulerOS", "2.0", "RedHat", False),
    ("Kylin Linux Advanced Server", "V10", "RedHat", False), ("Rocky", "9.4", "RedHat", False),
])
def test_d6_preflight_refuses_os_families_the_roles_cannot_install_on(name: str, version: str, family: str,
                                                                     ok: bool) -> None:
    defaults = _yaml("roles/preflight/defaults/main.yml")
    problems = probe.check_os_family(name, version, family, _families())
    if not problems:
        problems = probe.check_distribution(name, version, defaults["preflight_allowed_distributions"])
    assert (problems == []) is ok, problems
    if not ok:
        assert problems[0].startswith(f"{name} {version} (OS family {family}) is not an OS the roles can "
                                      "install on"), problems
        assert "supported: Debian (Debian, Ubuntu)" in problems[0]
        message = _render(_yaml("roles/preflight/vars/main.yml")["__preflight_message"],
                          {"inventory_hostname": "node00417", "__preflight_python_problem": "",
                           "__preflight_problems": problems})
        assert message.startswith("preflight failed on node00417 (1 problem):") and f"- {name} " in message


def test_d6_the_probe_gets_the_supported_families() -> None:
    task = next(t for t in _yaml("roles/preflight/tasks/main.yml") if "preflight_probe" in t)
    assert task["preflight_probe"]["supported_os_families"] == "{{ __preflight_os_families }}"
    assert _families() == [{"family": "Debian", "distributions": ["Debian", "Ubuntu"]}]


# -- D7 ------------------------------------------------------------------------------------------


def _etcd_variables(**extra: Any) -> dict[str, Any]:
    return {**_yaml("roles/etcd/defaults/main.yml"), **_yaml("roles/etcd/vars/main.yml"),
            "ufc_artifact_url": "http://mirror.example", "groups": {}, **extra}


def test_d7_the_default_etcd_is_a_checksum_verified_release_kubeadm_accepts() -> None:
    variables = _etcd_variables()
    assert variables["etcd_install_method"] == "tarball"
    url = _render(variables["etcd_tarball_url"], variables)
    version = url.rsplit("/etcd-v", 1)[1].split("-linux-")[0]
    assert tuple(int(p) for p in version.split(".")) >= (3, 5, 11), url
    block = _yaml("roles/etcd/tasks/install.yml")[-1]["block"]
    download = next(t["ansible.builtin.get_url"] for t in block if "ansible.builtin.get_url" in t)
    checksum = _render(download["checksum"], variables)
    assert checksum == "sha256:http://mirror.example/etcd/SHA256SUMS", checksum
    pinned = _render(download["checksum"], {**variables, "etcd_tarball_sha256": "a" * 64})
    assert pinned == "sha256:" + "a" * 64


def _version_assert() -> dict[str, Any]:
    return next(t for t in _yaml("roles/etcd/tasks/facts.yml") if "ExternalEtcdVersion" in t["name"])


@pytest.mark.parametrize(("package_version", "kube", "check", "refused"), [
    ("3.4.23-4+b4", "1.34.4", True, True),  # Debian bookworm
    ("3.4.30-1", "v1.35.4", True, True),  # Ubuntu noble
    ("", "1.34.4", True, True),  # apt has no etcd-server at all
    # kubeadm's MinExternalEtcdVersion: 3.5.24 at v1.34.4 and v1.35.4, 3.5.11 in 1.31
    ("3.5.16-1", "1.34.4", True, True),
    ("3.5.24-1", "1.34.4", True, False),
    ("1:3.5.23-0", "v1.35.4", True, True),  # an epoch does not hide the version
    ("3.6.5-1", "1.35.4", True, False),
    ("3.5.16-1", "1.31.4", True, False),
    ("1:3.5.11-0", "1.31.4", True, False),
    ("3.4.23-4+b4", "1.30.6", True, False),  # kubeadm 1.30 is not what ufcctl targets: no minimum here
    ("3.4.23-4+b4", "1.34.4", False, False),  # the explicit override (a test lab)
])
def test_d7_an_old_packaged_etcd_is_refused_before_install(package_version: str, kube: str, check: bool,
                                                           refused: bool) -> None:
    task = _version_assert()
    variables = _etcd_variables(etcd_install_method="package", ufc_kube_version=kube,
                                etcd_package_version_check=check, __etcd_clusters=["core"],
                                __etcd_state={"package_version": package_version}, inventory_hostname="cp1")
    runs = all(_render("{{ " + condition + " }}", variables) for condition in task["when"])
    passes = _render("{{ " + task["ansible.builtin.assert"]["that"] + " }}", variables) if runs else True
    assert (runs and not passes) is refused
    if refused:
        message = _render(task["ansible.builtin.assert"]["fail_msg"], variables)
        assert message.startswith("etcd on cp1: etcd_install_method is package")
        assert "ExternalEtcdVersion" in message
    facts = [t["name"] for t in _yaml("roles/etcd/tasks/facts.yml")]
    main = [t["name"] for t in _yaml("roles/etcd/tasks/main.yml")]
    assert facts.index(task["name"]) > 0 and main.index("Install etcd") > main.index(
        "Work out the clusters of this host, check the inventory and probe the host")


def test_d7_the_lab_installs_the_etcd_tarball_and_lets_no_etcd_preflight_check_through() -> None:
    """The lab used to keep Debian's etcd 3.4.23 and let kubeadm's ExternalEtcdVersion through; it now
    installs the real etcd 3.6.17 built from its Go modules (tests/lab_build), as production does. The one
    check it lets through is SystemVerification (kubeadm 1.35 refuses its cgroup v1 host)."""
    defaults = _yaml("roles/kube_control_plane/defaults/main.yml")
    assert defaults["kube_control_plane_ignore_preflight_errors"] == []
    registration = _yaml("roles/kube_control_plane/vars/main.yml")["__kube_control_plane_node_registration"]
    assert registration["ignorePreflightErrors"] == "{{ kube_control_plane_ignore_preflight_errors }}"
    assert lab_inventory.cluster_vars(_lab())["kube_control_plane_ignore_preflight_errors"] == [
        "SystemVerification"]
    etcd = lab_inventory.etcd_vars()
    assert "etcd_install_method" not in etcd and "etcd_package_version_check" not in etcd
    assert _yaml("roles/etcd/defaults/main.yml")["etcd_install_method"] == "tarball"
