"""The node_tuning_sysctl module's decisions per key, against a fake /proc/sys tree, and the sysctl.d and
modules-load.d templates that carry them for boot (written by ufc_files, whose writes, check mode and
owner/mode drift tests/unit/roles/test_ufc_common_files.py covers)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from tests.helpers.pyimports import load_file
from tests.helpers.role_templates import render

ROOT = Path(__file__).resolve().parents[3]
sysctl = load_file(ROOT / "roles" / "node_tuning" / "library" / "node_tuning_sysctl.py")
RMEM = "4096 131072 33554432"


@pytest.fixture
def proc(tmp_path):
    """A /proc/sys stand-in holding a few keys with kernel-like contents."""
    values = {
        "net/core/somaxconn": "4096\n",
        "net/ipv4/tcp_rmem": "4096\t131072\t6291456\n",
        "fs/file-max": "9223372036854775807\n",
        "vm/max_map_count": "65530\n",
    }
    for relative, content in values.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(content)
    return tmp_path


@pytest.mark.parametrize(
    ("key", "relative"),
    [
        pytest.param("net.ipv4.tcp_rmem", "net/ipv4/tcp_rmem", id="dots"),
        pytest.param("net/ipv4/conf/eth0.100/rp_filter", "net/ipv4/conf/eth0.100/rp_filter", id="slashes"),
    ],
)
def test_sysctl_path(key, relative):
    assert sysctl.sysctl_path(key, "/proc/sys") == f"/proc/sys/{relative}"


@pytest.mark.parametrize(
    ("value", "normal"),
    [
        pytest.param(32768, "32768", id="int"),
        pytest.param("4096\t87380  16777216\n", "4096 87380 16777216", id="kernel-tabs"),
        pytest.param(True, "1", id="bool"),
        pytest.param("", "", id="empty"),
    ],
)
def test_normalize(value, normal):
    assert sysctl.normalize(value) == normal


@pytest.mark.parametrize(
    ("wanted", "current", "result"),
    [
        pytest.param("262144", "65530", "262144", id="raise"),
        pytest.param("2097152", "9223372036854775807", "9223372036854775807", id="keep-higher"),
        pytest.param(RMEM, "4096 131072 6291456", RMEM, id="vector-exact"),
    ],
)
def test_floor_value(wanted, current, result):
    assert sysctl.floor_value(wanted, current) == result


@pytest.mark.parametrize(
    ("key", "wanted", "floor", "container", "status", "line", "reason"),
    [
        pytest.param("net.core.somaxconn", 32768, True, False, "set", "plain", "", id="raise-net-key"),
        pytest.param("net.core.somaxconn", 4096, False, False, "ok", "plain", "", id="already-right"),
        pytest.param("fs.file-max", 2097152, True, False, "ok", "plain", "", id="floor-keeps-kernel-default"),
        pytest.param("fs.file-max", 2097152, False, False, "set", "plain", "", id="exact-lowers"),
        pytest.param("net.ipv4.tcp_rmem", RMEM, False, False, "set", "plain", "", id="vector"),
        pytest.param("net.netfilter.nf_conntrack_max", 1, True, False, "skipped", "optional",
                     "absent from this kernel", id="module-not-loaded"),
        pytest.param("net.ipv4.neigh.default.gc_thresh1", 1, False, True, "skipped", "optional",
                     "absent from the network namespace of this container", id="host-only-net-key-in-ctr"),
        pytest.param("vm.max_map_count", 262144, True, True, "skipped", "commented",
                     "kernel-global", id="global-key-in-container"),
        pytest.param("fs.file-max", 2097152, True, True, "ok", "commented", "", id="global-ok-in-ctr"),
        pytest.param("kernel.pid_max", 4194304, True, True, "skipped", "commented",
                     "kernel-global", id="global-absent-in-container"),
        pytest.param("net.core.somaxconn", 32768, True, True, "set", "plain", "", id="netns-key-in-ctr"),
    ],
)
def test_plan_key(proc, key, wanted, floor, container, status, line, reason):
    entry = sysctl.plan_key(key, wanted, floor, container, root=str(proc))
    assert (entry["status"], entry["line"]) == (status, line)
    assert entry["reason"].startswith(reason)


@pytest.mark.parametrize(
    ("container", "reason"),
    [
        pytest.param(False, "not writable (needs root: become)", id="host"),
        pytest.param(True, "read-only in this container", id="container"),
    ],
)
def test_plan_key_skips_what_the_kernel_will_not_let_it_write(proc, monkeypatch, container, reason):
    monkeypatch.setattr(sysctl.os, "access", lambda path, mode: False)  # root passes DAC checks on tmpfs
    entry = sysctl.plan_key("net.core.somaxconn", 32768, True, container, root=str(proc))
    assert (entry["status"], entry["line"]) == ("skipped", "optional")
    assert entry["reason"].startswith(reason)


def test_write_key_writes_and_reads_back(proc):
    entry = sysctl.plan_key("net.ipv4.tcp_rmem", RMEM, False, False, root=str(proc))
    assert sysctl.write_key(entry, root=str(proc))["status"] == "set"
    assert (proc / "net/ipv4/tcp_rmem").read_text() == RMEM + "\n"
    assert sysctl.plan_key("net.ipv4.tcp_rmem", RMEM, False, False, str(proc))["status"] == "ok"


def _refusing_open(code: int):
    def fake_open(path, mode="r", *args, **kwargs):
        if "w" in mode:
            raise OSError(code, errno.errorcode[code])
        return open(path, mode, *args, **kwargs)

    return fake_open


@pytest.mark.parametrize("code", [errno.EPERM, errno.EACCES, errno.EROFS], ids=["EPERM", "EACCES", "EROFS"])
def test_write_key_skips_when_the_kernel_refuses(proc, monkeypatch, code):
    entry = sysctl.plan_key("net.core.somaxconn", 32768, True, False, root=str(proc))
    monkeypatch.setattr(sysctl, "open", _refusing_open(code), raising=False)
    result = sysctl.write_key(entry, root=str(proc))
    assert (result["status"], result["line"]) == ("skipped", "optional")
    assert result["reason"].startswith("kernel refused the write")


def test_write_key_fails_on_a_value_the_kernel_rejects(proc, monkeypatch):
    entry = sysctl.plan_key("net.core.somaxconn", 32768, True, False, root=str(proc))
    monkeypatch.setattr(sysctl, "open", _refusing_open(errno.EINVAL), raising=False)
    with pytest.raises(ValueError, match="the kernel rejected net.core.somaxconn = 32768"):
        sysctl.write_key(entry, root=str(proc))


def test_render_file_lists_every_key_in_the_form_boot_can_take():
    entries = [
        {"key": "net.core.somaxconn", "value": "32768", "line": "plain", "reason": ""},
        {"key": "net.netfilter.nf_conntrack_max", "value": "1048576", "line": "optional",
         "reason": "absent from this kernel"},
        {"key": "vm.max_map_count", "value": "262144", "line": "commented", "reason": "kernel-global"},
    ]
    variables = {"__node_tuning_sysctl": {"settings": entries},
                 "node_tuning_sysctl_file": "/etc/sysctl.d/90-ufcctl.conf"}
    text = render("node_tuning", "sysctl.conf.j2", variables)
    lines = text.splitlines()
    assert "net.core.somaxconn = 32768" in lines
    optional = lines.index("-net.netfilter.nf_conntrack_max = 1048576")
    assert lines[optional - 1] == "# skipped: absent from this kernel"
    assert "# vm.max_map_count = 262144" in lines and "vm.max_map_count = 262144" not in lines
    assert "/etc/sysctl.d/99-local.conf" in text


def test_the_modules_file_lists_each_module_for_boot():
    text = render("node_tuning", "modules-load.conf.j2",
                  {"node_tuning_kube_modules": ["br_netfilter", "overlay"]})
    assert text.splitlines()[-2:] == ["br_netfilter", "overlay"]
    assert text.startswith("# Kernel modules loaded at boot")


def test_missing_modules_are_those_sys_module_does_not_list(tmp_path):
    (tmp_path / "nf_conntrack").mkdir()
    (tmp_path / "br_netfilter").mkdir()
    assert sysctl.missing_modules(["br_netfilter", "nf-conntrack", "overlay"], str(tmp_path)) == ["overlay"]


class _FailingModprobe:
    """An AnsibleModule stand-in whose modprobe fails as in a container without CAP_SYS_MODULE."""

    def __init__(self):
        self.ran = []

    def get_bin_path(self, name):
        return f"/sbin/{name}"

    def run_command(self, argv, check_rc=False):
        self.ran.append(argv)
        return 1, "", "modprobe: ERROR: could not insert 'br_netfilter': Operation not permitted\n"

    def fail_json(self, msg, **kwargs):
        raise AssertionError(msg)


def test_a_module_that_cannot_be_loaded_fails_the_host_naming_it():
    module = _FailingModprobe()
    with pytest.raises(AssertionError) as failed:
        sysctl.load_modules(module, ["br_netfilter"], "w1")
    assert module.ran == [["/sbin/modprobe", "br_netfilter"]]
    assert str(failed.value).startswith(
        "kernel module br_netfilter is not loaded on w1 and `modprobe br_netfilter` failed: modprobe: ERROR: "
        "could not insert 'br_netfilter': Operation not permitted -> fix:")
    assert "node_tuning_load_modules: false" in str(failed.value)
