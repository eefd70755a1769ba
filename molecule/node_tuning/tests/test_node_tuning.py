"""node_tuning on a lab-like container (nothing settable) and a netns-writable one (namespace keys set)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import testinfra
import yaml

SYSCTL_FILE = "/etc/sysctl.d/90-ufcctl.conf"
# Keys every Linux >= 4.15 keeps per network namespace and lets the namespace's root change.
PER_NETNS = [
    "net.core.somaxconn",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_local_reserved_ports",
]


def _profile() -> dict[str, str]:
    defaults = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "roles/node_tuning/defaults/main.yml"
    profile = yaml.safe_load(defaults.read_text())["node_tuning_sysctl"]
    return {key: " ".join(str(value).split()) for key, value in profile.items()}


PROFILE = _profile()


def _proc(host, key: str) -> str:
    return " ".join(host.file("/proc/sys/" + key.replace(".", "/")).content_string.split())


def _instance(instance_names: list[str], suffix: str) -> str:
    return next(name for name in instance_names if name.endswith(suffix))


@pytest.fixture(scope="module")
def lab_name(instance_names) -> str:
    return _instance(instance_names, "-lab")


@pytest.fixture(scope="module")
def netns_name(instance_names) -> str:
    return _instance(instance_names, "-netns")


@pytest.fixture(scope="module")
def lab(lab_name):
    return testinfra.get_host(f"podman://{lab_name}")


@pytest.fixture(scope="module")
def netns(netns_name):
    return testinfra.get_host(f"podman://{netns_name}")


def _file_lines(host) -> list[str]:
    return host.file(SYSCTL_FILE).content_string.splitlines()


@pytest.mark.parametrize("which", ["lab", "netns"])
def test_file_lists_every_key_of_the_profile(which, request):
    host = request.getfixturevalue(which)
    sysctl_file = host.file(SYSCTL_FILE)
    assert (sysctl_file.user, sysctl_file.group, sysctl_file.mode) == ("root", "root", 0o644)
    settings = [line for line in _file_lines(host) if " = " in line]
    keys = [line.lstrip("#- ").split(" = ")[0] for line in settings]
    assert keys == list(PROFILE)


def test_netns_container_has_its_namespace_keys_set(netns):
    lines = _file_lines(netns)
    for key in PER_NETNS:
        assert _proc(netns, key) == PROFILE[key], key
        assert f"{key} = {PROFILE[key]}" in lines, key


def test_netns_container_leaves_kernel_global_keys_to_the_host(netns):
    lines = _file_lines(netns)
    for key in ("vm.max_map_count", "fs.file-max", "kernel.pid_max", "fs.inotify.max_user_watches"):
        assert any(line.startswith(f"# {key} = ") for line in lines), key


def test_lab_container_sets_nothing_and_comments_global_keys(lab):
    lines = _file_lines(lab)
    assert _proc(lab, "net.core.somaxconn") != PROFILE["net.core.somaxconn"]
    assert f"-net.core.somaxconn = {PROFILE['net.core.somaxconn']}" in lines
    assert f"# vm.max_map_count = {PROFILE['vm.max_map_count']}" in lines


def test_skipped_keys_are_reported_with_reasons(run_playbook, lab_name, netns_name):
    run = run_playbook()
    assert run.rc == 0, run.output
    assert "node_tuning skipped" in run.text and f"key(s) on {lab_name}:" in run.text
    assert "net.core.somaxconn: read-only in this container" in run.text
    assert "vm.max_map_count: kernel-global: from a container it would change the container host" in run.text
    assert "net.ipv4.neigh.default.gc_thresh1: absent from the network namespace of this" in run.text
    # Hosts report in completion order: cut the netns host's list out of the output.
    end = r"(?:ok: \[|changed: \[|\[WARNING\]|TASK \[|PLAY RECAP|\Z)"  # warnings come after the recap
    netns_report = re.search(rf"key\(s\) on {re.escape(netns_name)}:(.*?){end}", run.text, re.DOTALL)
    assert netns_report, run.output
    assert "net.core.somaxconn:" not in netns_report.group(1)
    assert "vm.max_map_count: kernel-global" in netns_report.group(1)


def test_check_mode_reports_changes_and_writes_nothing(run_playbook, netns, netns_name):
    extra = {"node_tuning_sysctl_extra": {"net.core.somaxconn": 40000}}
    run = run_playbook(check=True, diff=True, limit=netns_name, extra_vars=extra)
    assert run.rc == 0, run.output
    # two tasks change: the module's runtime value, and ufc_files' sysctl.d file from the template
    assert "changed=2" in run.text, run.output
    # both the runtime value and the file would change, and --diff shows each
    change = f"-net.core.somaxconn = {PROFILE['net.core.somaxconn']} +net.core.somaxconn = 40000"
    runtime, _, in_file = run.text.partition(f"+++ after: {SYSCTL_FILE}")
    assert change in runtime.split("+++ after: runtime (/proc/sys)", 1)[-1], run.output
    assert change in in_file, run.output
    assert _proc(netns, "net.core.somaxconn") == PROFILE["net.core.somaxconn"]
    assert f"net.core.somaxconn = {PROFILE['net.core.somaxconn']}" in _file_lines(netns)


def test_a_value_the_kernel_rejects_fails_naming_key_and_fix(run_playbook, netns, netns_name):
    extra = {"node_tuning_sysctl_extra": {"net.ipv4.ip_local_port_range": "60000 1000"}}
    run = run_playbook(limit=netns_name, extra_vars=extra)
    assert run.rc != 0
    expected = "the kernel rejected net.ipv4.ip_local_port_range = 60000 1000: Invalid argument -> fix:"
    assert expected in run.text, run.output
    assert _proc(netns, "net.ipv4.ip_local_port_range") == PROFILE["net.ipv4.ip_local_port_range"]


@pytest.mark.parametrize("which", ["lab", "netns"])
def test_boot_time_apply_accepts_the_file(which, request):
    # What systemd-sysctl.service does at boot: "-" lines may fail, plain lines must apply.
    host = request.getfixturevalue(which)
    host.run_test(f"/lib/systemd/systemd-sysctl {SYSCTL_FILE}")
