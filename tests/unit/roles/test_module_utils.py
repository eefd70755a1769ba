"""roles/ufc_common/module_utils: the node-side helpers every role's modules share."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pyimports import add_role_module_utils

add_role_module_utils()
from ansible.module_utils import ufcctl_files, ufcctl_packages, ufcctl_systemd  # noqa: E402


class FakeModule:
    def __init__(self, out: str, rc: int = 0, systemctl: str | None = "/usr/bin/systemctl") -> None:
        self.out, self.rc, self.systemctl, self.commands = out, rc, systemctl, []

    def get_bin_path(self, name: str) -> str | None:
        return self.systemctl if name == "systemctl" else None

    def run_command(self, command: list[str], **_: Any) -> tuple[int, str, str]:
        self.commands.append(command)
        return self.rc, self.out, ""


SHOW = (
    "Id=chrony.service\nNames=chrony.service chronyd.service\nActiveState=active\nUnitFileState=enabled\n\n"
    "Id=ntpsec.service\nNames=ntpsec.service\nActiveState=inactive\nUnitFileState=\n\n"
    "Id=haproxy.service\nNames=haproxy.service\nActiveState=failed\nUnitFileState=static\n"
)


def test_units_asked_by_alias_or_without_suffix_are_found_in_one_call() -> None:
    module = FakeModule(SHOW)
    states = ufcctl_systemd.unit_states(module, ["chronyd", "ntpsec", "haproxy.service"])
    assert states == {
        "chronyd": {"active": "active", "enabled": "enabled"},
        "ntpsec": {"active": "inactive", "enabled": ""},
        "haproxy.service": {"active": "failed", "enabled": "static"},
    }
    assert len(module.commands) == 1 and module.commands[0][1] == "show"


@pytest.mark.parametrize(("module", "units"), [
    pytest.param(FakeModule("", rc=1), ["a.service"], id="systemctl-fails"),
    pytest.param(FakeModule(SHOW, systemctl=None), ["a.service"], id="no-systemctl"),
])
def test_unknown_when_systemd_cannot_answer(module: FakeModule, units: list[str]) -> None:
    unknown = {"active": "unknown", "enabled": "unknown"}
    assert ufcctl_systemd.unit_states(module, units) == {"a.service": unknown}
    assert ufcctl_systemd.unit_states(module, []) == {}


@pytest.mark.parametrize(("state", "active", "enabled"), [
    ({"active": "active", "enabled": "enabled"}, True, True),
    ({"active": "reloading", "enabled": "static"}, True, True),
    ({"active": "activating", "enabled": "disabled"}, False, False),
    ({"active": "unknown", "enabled": "masked"}, False, False),
])
def test_the_quiet_answers_of_is_active_and_is_enabled(
    state: dict[str, str], active: bool, enabled: bool
) -> None:
    assert ufcctl_systemd.is_active(state) is active and ufcctl_systemd.is_enabled(state) is enabled


DPKG = """\
Package: haproxy
Status: install ok installed
Version: 2.6.12-1

Package: keepalived
Status: deinstall ok config-files
Description: failover
 continuation: line
"""


def test_missing_packages_from_dpkg_status_else_rpm(tmp_path: Any) -> None:
    status = tmp_path / "status"
    status.write_text(DPKG)
    module = FakeModule("")
    assert ufcctl_packages.missing_packages(module, ["haproxy", "keepalived", "x"], str(status)) == [
        "keepalived", "x"]
    assert module.commands == []

    class Rpm(FakeModule):
        def get_bin_path(self, name: str) -> str | None:
            return "/usr/bin/rpm" if name == "rpm" else None

    rpm = Rpm("", rc=1)
    assert ufcctl_packages.missing_packages(rpm, ["haproxy"], str(tmp_path / "none")) == ["haproxy"]
    assert rpm.commands == [["/usr/bin/rpm", "-q", "haproxy"]]
    nothing = FakeModule("", systemctl=None)
    assert ufcctl_packages.missing_packages(nothing, ["a"], str(tmp_path / "none")) is None


def test_an_atomic_write_replaces_the_file_whole_with_its_mode(tmp_path: Path) -> None:
    dest = tmp_path / "record.json"
    dest.write_text("old")
    before = dest.stat().st_ino
    ufcctl_files.write_atomically(str(dest), b"new\n", 0o640)
    assert dest.read_bytes() == b"new\n" and stat.S_IMODE(dest.stat().st_mode) == 0o640
    assert dest.stat().st_ino != before  # a new file renamed over the old one, not rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]


def test_a_failed_rename_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dest = tmp_path / "sysctl.conf"
    dest.write_text("old")

    def broken(src: str, dst: str) -> None:
        raise OSError("rename failed")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="rename failed"):
        ufcctl_files.write_atomically(str(dest), b"new", 0o644)
    assert dest.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["sysctl.conf"]


def test_a_staged_file_sits_beside_its_destination_until_replaced(tmp_path: Path) -> None:
    dest = tmp_path / "a.conf"
    tmp = ufcctl_files.stage_beside(str(dest), b"x", 0o600)
    assert Path(tmp).parent == tmp_path and Path(tmp).name.startswith(".a.conf.") and not dest.exists()
    assert Path(tmp).name.endswith(".part")  # the node-side programs' scheme (one writer)
    assert stat.S_IMODE(os.stat(tmp).st_mode) == 0o600
    ufcctl_files.replace(tmp, str(dest))
    assert dest.read_bytes() == b"x" and not Path(tmp).exists()
