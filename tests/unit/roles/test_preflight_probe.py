"""The preflight_probe module's parsing and rules, on fixed inputs and this machine's own filesystem."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.pyimports import load_file

ROOT = Path(__file__).resolve().parents[3]
probe = load_file(ROOT / "roles" / "preflight" / "library" / "preflight_probe.py")

TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0947 00000000:0000 0A 00000000:00000000 00:00000000 00000000   111        0 4242 1 0
   1: 0100007F:0947 0100007F:9C40 01 00000000:00000000 00:00000000 00000000   111        0 4243 1 0
   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 0
"""
TCP6 = """\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1A0A 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 99 1 0
"""  # noqa: E501 - the kernel's own line format


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(TCP, [(2375, 4242), (22, 17)], id="ipv4-listen-only-not-established"),
        pytest.param(TCP6, [(6666, 99)], id="ipv6"),
        pytest.param(TCP.splitlines()[0], [], id="header-only"),
    ],
)
def test_parse_listeners(text, expected):
    assert probe.parse_listeners(text) == expected


@pytest.mark.parametrize(
    ("cgroup", "unit"),
    [
        pytest.param("0::/system.slice/etcd-core.service\n", "etcd-core", id="v2"),
        pytest.param("12:pids:/system.slice/kubelet.service\n1:name=systemd:/system.slice/kubelet.service\n",
                     "kubelet", id="v1"),
        pytest.param("0::/system.slice/containerd.service/kubepods.slice\n", "containerd", id="nested"),
        pytest.param("0::/user.slice/user-0.slice/session-3.scope\n", "", id="no-service"),
        pytest.param("", "", id="unreadable"),
    ],
)
def test_systemd_unit(cgroup, unit):
    assert probe.systemd_unit(cgroup) == unit


ETCD = {"pid": 10, "program": "etcd", "unit": "etcd-core"}
NGINX = {"pid": 11, "program": "nginx", "unit": "nginx"}
LEGACY = {"pid": 12, "program": "python3.11", "unit": "etcd"}


@pytest.mark.parametrize(
    ("listeners", "owners", "problem"),
    [
        pytest.param({}, {}, None, id="free"),
        pytest.param({2379: {1}}, {1: ETCD}, None, id="held-by-allowed-program"),
        pytest.param({2379: {1}}, {1: LEGACY}, None, id="held-by-allowed-unit"),
        pytest.param({2379: {1}}, {1: NGINX}, "pid 11 nginx (unit nginx) -> fix: stop", id="stranger"),
        pytest.param({2379: {1, 2}}, {1: ETCD, 2: NGINX}, "pid 11 nginx", id="ours-and-a-stranger"),
        pytest.param({2379: {1}}, {}, "preflight cannot identify -> fix: run with become", id="unknown"),
        pytest.param({2380: {1}}, {1: NGINX}, None, id="other-port-ignored"),
    ],
)
def test_check_ports(listeners, owners, problem):
    requirement = [{"port": "2379", "name": "etcd core client", "owners": ["etcd"]}]
    problems = probe.check_ports(requirement, listeners, owners)
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1
        assert problems[0].startswith("TCP port 2379 (etcd core client) ")
        assert problem in problems[0]


@pytest.mark.parametrize(
    ("entry", "groups", "applies"),
    [
        pytest.param({"port": 1}, [], True, id="no-groups-every-host"),
        pytest.param({"port": 1, "groups": ["etcd_core"]}, ["etcd_core", "kube_node"], True, id="member"),
        pytest.param({"port": 1, "groups": ["etcd_core"]}, ["kube_node"], False, id="not-member"),
        pytest.param({"port": 1, "groups": None}, ["kube_node"], True, id="null-groups"),
    ],
)
def test_applies(entry, groups, applies):
    assert probe.applies(entry, groups) is applies


def test_requirements_on_one_filesystem_add_up(tmp_path):
    free_gib = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize / probe.GIB
    half = round(free_gib / 2 + 0.5, 1)  # two of these exceed the free space, one does not
    one = probe.measure_disks([{"path": str(tmp_path), "min_free_gib": half}])
    assert probe.check_disks(one) == []
    later = tmp_path / "not" / "yet"
    two = probe.measure_disks(
        [{"path": str(tmp_path), "min_free_gib": half}, {"path": str(later), "min_free_gib": half}]
    )
    assert len(two) == 1, "a missing path is measured on its nearest existing parent's filesystem"
    (problem,) = probe.check_disks(two)
    assert f"needs {2 * half:.10g} GiB ({tmp_path} {half:.10g} + {later} {half:.10g}) -> fix:" in problem


def test_nearest_existing_and_mount_point(tmp_path):
    assert probe.nearest_existing(str(tmp_path / "a" / "b")) == str(tmp_path)
    assert probe.mount_point("/") == "/"
    mount = probe.mount_point(str(tmp_path))
    assert os.stat(mount).st_dev == os.stat(tmp_path).st_dev
    assert mount == "/" or os.stat(os.path.dirname(mount)).st_dev != os.stat(mount).st_dev


def test_parse_swaps():
    text = "Filename\tType\tSize\tUsed\tPriority\n/dev/zram0  partition\t8388604\t0\t100\n"
    assert probe.parse_swaps(text) == [{"name": "/dev/zram0", "size_kib": 8388604}]
    assert probe.parse_swaps(text.splitlines()[0]) == []


@pytest.mark.parametrize(
    ("swaps", "container", "problems", "notes"),
    [
        pytest.param([], False, 0, 0, id="off"),
        pytest.param([{"name": "/swap", "size_kib": 2048}], False, 1, 0, id="on"),
        pytest.param([{"name": "/swap", "size_kib": 2048}], True, 0, 1, id="on-in-container-warns"),
    ],
)
def test_check_swap(swaps, container, problems, notes):
    found, noted = probe.check_swap(swaps, container)
    assert (len(found), len(noted)) == (problems, notes)
    assert all("swapoff -a" in p for p in found)


SERVICES = ["chrony", "systemd-timesyncd"]
SYNCED, UNSYNCED = 50_000, probe.SYNCED_MAX_ERROR_US


@pytest.mark.parametrize(
    ("states", "max_error", "container", "problems", "notes"),
    [
        pytest.param({"chrony": "active"}, SYNCED, False, [], [], id="active-and-synced"),
        pytest.param({"chrony": "inactive"}, SYNCED, False, ["no time sync service"], [], id="no-service"),
        pytest.param({"chrony": "active"}, UNSYNCED, False, ["not synchronized"], [], id="not-synced-yet"),
        pytest.param({}, UNSYNCED, False, ["no time sync service", "not synchronized"], [], id="both"),
        pytest.param({}, SYNCED, True, [], [], id="container-needs-no-service"),
        pytest.param({}, UNSYNCED, True, [], ["shares its host's clock"], id="container-unsynced-warns"),
        pytest.param({"chrony": "active"}, None, False, [], ["could not read"], id="clock-unreadable"),
    ],
)
def test_check_time(states, max_error, container, problems, notes):
    found, noted = probe.check_time(states, max_error, SERVICES, container)
    assert len(found) == len(problems) and all(want in got for want, got in zip(problems, found, strict=True))
    assert len(noted) == len(notes) and all(want in got for want, got in zip(notes, noted, strict=True))


def test_clock_max_error_reads_the_kernel():
    # A wrong struct timex layout would read garbage; the kernel caps maxerror at 16 s.
    value = probe.clock_max_error_us()
    assert value is not None and 0 <= value <= probe.SYNCED_MAX_ERROR_US


@pytest.mark.parametrize(
    ("name", "allowed", "ok"),
    [
        pytest.param("openEuler", ["Debian", "openEuler"], True, id="allowed"),
        pytest.param("CentOS", ["Debian", "openEuler"], False, id="not-allowed"),
        pytest.param("debian", ["Debian"], False, id="case-sensitive-like-ansible-facts"),
    ],
)
def test_check_distribution(name, allowed, ok):
    problems = probe.check_distribution(name, "1", allowed)
    assert (problems == []) is ok
    assert all("preflight_allowed_distributions" in p for p in problems)


@pytest.mark.parametrize(("name", "version", "groups", "ok"), [
    pytest.param("Ubuntu", "22.04", ["npu_node"], True, id="ubuntu-22.04"),
    pytest.param("Ubuntu", "24.04", ["npu_node", "kube_node"], True, id="ubuntu-24.04"),
    pytest.param("Debian", "12.5", ["npu_node"], False, id="debian-12-npu"),
    pytest.param("Ubuntu", "20.04", ["npu_node"], False, id="ubuntu-20.04-npu"),
    pytest.param("Debian", "12.5", ["kube_control_plane"], True, id="debian-12-control-plane"),
])
def test_npu_nodes_run_an_os_on_huaweis_list(name, version, groups, ok):
    """issue 44, D18: Debian 12 is not on Huawei's Atlas A2 OS list; an NPU node is refused there."""
    allowed = ["Ubuntu 22.04", "Ubuntu 24.04"]
    problems = probe.check_npu_os(name, version, allowed, groups)
    assert (problems == []) == ok, problems
    if not ok:
        assert f"{name} {version} is not on Huawei's OS list for the NPU driver" in problems[0]
        assert "preflight_npu_distributions" in problems[0] and "Ubuntu 22.04, Ubuntu 24.04" in problems[0]


def test_a_validated_os_can_be_added_and_an_entry_matches_its_point_releases():
    assert probe.check_npu_os("Debian", "12.5", ["Debian 12"], ["npu_node"]) == []
    assert probe.check_npu_os("Ubuntu", "22.04", ["Ubuntu 22.04"], ["npu_node"]) == []
    assert probe.check_npu_os("Ubuntu", "22.10", ["Ubuntu 22.04"], ["npu_node"]) != []
    assert probe.check_npu_os("Debian", "12", [], ["npu_node"]) == []  # [] turns it off


def test_the_role_passes_the_list_and_defaults_to_ubuntu():
    import yaml

    role = ROOT / "roles" / "preflight"
    tasks = yaml.safe_load((role / "tasks" / "main.yml").read_text())
    task = next(t for t in tasks if "preflight_probe" in t)
    assert task["preflight_probe"]["npu_distributions"] == "{{ preflight_npu_distributions }}"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    assert defaults["preflight_npu_distributions"] == ["Ubuntu 22.04", "Ubuntu 24.04"]
