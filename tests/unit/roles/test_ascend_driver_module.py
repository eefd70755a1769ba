"""roles/ascend_driver's node module: parsing npu-smi and checksum files, the install plan, the health
gate, the install lock and the installer's process (its own session, the lock inherited, killed
after the timeout). The role's end-to-end behaviour is molecule/ascend_driver's."""

from __future__ import annotations

import contextlib
import fcntl
import grp
import io
import os
import pwd
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pyimports import load_file

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # the emulators (lab/) are imported from the repository root
    sys.path.insert(0, str(ROOT))

from tests.lab_standins.npu_emulator import npu_smi  # noqa: E402
from ufcctl.domain.npu import driver_plan  # noqa: E402

ROLE = ROOT / "roles" / "ascend_driver"
mod = load_file(ROLE / "library" / "ufc_ascend_driver.py", "ufc_ascend_driver_module")
packages = load_file(ROLE / "module_utils" / "ufcctl_ascend_packages.py", "ufcctl_ascend_packages_utils")
action = load_file(ROLE / "action_plugins" / "ufc_ascend_driver.py", "ufc_ascend_driver_action")
USER = ["--install-username=HwHiAiUser", "--install-usergroup=HwHiAiUser"]
needs_timeout = pytest.mark.skipif(not shutil.which("timeout"), reason="needs coreutils timeout")


def _emulator(fn: Any, *args: Any, prefix: Path | None = None, monkeypatch: Any = None) -> str:
    if prefix is not None:
        monkeypatch.setattr(npu_smi, "PREFIX", str(prefix))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args)
    return out.getvalue()


def test_version_info_reads_the_version_line() -> None:
    assert mod.version_info("package_name=x\nVersion=24.1.rc3\nemulated=true\n") == "24.1.rc3"
    assert mod.version_info("no version here\n") == ""


def test_firmware_version_is_read_from_the_emulators_board_output(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "driver").mkdir()
    (tmp_path / "driver" / "version.info").write_text("Version=24.1.rc3\n")
    (tmp_path / "firmware").mkdir()
    (tmp_path / "firmware" / "version.info").write_text("Version=7.5.0.2.220\n")
    board = _emulator(npu_smi.board, 0, 8, prefix=tmp_path, monkeypatch=monkeypatch)
    assert "Software Version" in board  # a line that must not be mistaken for the firmware's
    assert mod.firmware_version(board) == "7.5.0.2.220"
    assert mod.firmware_version(board.replace("7.5.0.2.220", "")) == ""


@pytest.mark.parametrize(
    ("chips", "bad", "expected", "version", "deferred", "problems"),
    [
        (8, set(), 8, "24.1.rc3", False, []),
        (8, {3}, 8, "24.1.rc3", False, ["chips not OK: 3 Critical"]),
        (16, {3, 15}, 16, "24.1.rc3", False, ["chips not OK: 3 Critical, 15 Critical"]),
        (4, set(), 8, "24.1.rc3", False, ["4 chip(s) listed, 8 expected"]),
        (8, set(), 8, "24.1.rc4", False, ["driver version 24.1.rc3, expected 24.1.rc4"]),
        (8, set(), 8, "24.1.rc4", True, []),
    ],
    ids=["healthy", "one-bad", "two-bad", "missing-chips", "old-driver", "old-driver-reboot-pending"],
)
def test_health_gate_on_the_emulators_npu_smi_info(chips, bad, expected, version, deferred, problems) -> None:
    out = _emulator(npu_smi.info, chips, "910B3", bad, "24.1.rc3")
    assert mod.health_problems(0, out, "", expected, version, deferred) == problems


def test_health_gate_fails_when_npu_smi_fails() -> None:
    found = mod.health_problems(1, "", "dcmi module initialize failed. ret is -8005\n", 8, "24.1.rc3", False)
    assert found == ["npu-smi info failed (rc 1): dcmi module initialize failed. ret is -8005"]


SUMS = "\n".join([
    "# a comment line",
    "1" * 64 + "  Ascend-hdk-910b-npu-driver_24.1.rc3_linux-x86_64.run",
    "2" * 64 + " *Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run",
    "3" * 64 + "  ./Ascend-hdk-910b-npu-firmware_7.5.0.1.129.run",
    "A" * 64 + "  Upper.run",
    "not-a-sum  Other.run",
])


@pytest.mark.parametrize(
    ("package", "digest"),
    [
        ("Ascend-hdk-910b-npu-driver_24.1.rc3_linux-x86_64.run", "1" * 64),
        ("Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run", "2" * 64),  # binary-mode line
        ("Ascend-hdk-910b-npu-firmware_7.5.0.1.129.run", "3" * 64),  # ./ prefix
        ("Upper.run", "a" * 64),
        ("Other.run", ""),  # not a sha256
        ("Ascend-hdk-910b-npu-driver_24.1.rc3_linux-x86_6", ""),  # a prefix is not a match
    ],
)
def test_checksum_file_lookup(package: str, digest: str) -> None:
    assert packages.checksum_from_file(SUMS, package) == digest


def _plan(driver: str, firmware: str, *, enabled: bool = True, force: bool = False) -> list[tuple[str, str]]:
    steps = driver_plan.plan(driver, firmware, "24.1.rc3", "7.5.0.2.220", enabled, force, "HwHiAiUser",
                             "HwHiAiUser")
    return [(kind, " ".join(flags)) for kind, _target, flags in steps]


FULL_DRIVER = " ".join(["--nox11", "--full", "--install-for-all", *USER, "--quiet"])


@pytest.mark.parametrize(
    ("driver", "firmware", "options", "steps"),
    [
        ("", "", {}, [("driver", FULL_DRIVER), ("firmware", "--nox11 --full --quiet")]),
        ("24.1.rc2", "7.5.0.1.129", {},
         [("firmware", "--nox11 --upgrade --quiet"), ("driver", "--nox11 --upgrade --quiet")]),
        ("24.1.rc3", "7.5.0.2.220", {}, []),
        ("24.1.rc3", "7.5.0.2.220", {"force": True},
         [("firmware", "--nox11 --upgrade --quiet"), ("driver", "--nox11 --upgrade --quiet")]),
        ("24.1.rc2", "", {},
         [("driver", "--nox11 --upgrade --quiet"), ("firmware", "--nox11 --full --quiet")]),
        ("24.1.rc2", "7.5.0.1.129", {"enabled": False}, [("driver", "--nox11 --upgrade --quiet")]),
        ("24.1.rc3", "7.5.0.1.129", {}, [("firmware", "--nox11 --upgrade --quiet")]),
        ("", "", {"enabled": False}, [("driver", FULL_DRIVER)]),
    ],
    ids=["first-install", "upgrade", "at-target", "force", "firmware-missing", "firmware-disabled",
         "firmware-only", "first-install-no-firmware"],
)
def test_plan_orders_and_flags_like_the_install_guide(driver, firmware, options, steps) -> None:
    assert _plan(driver, firmware, **options) == steps


@pytest.mark.parametrize(
    ("kind", "rc", "output", "message"),
    [
        ("driver", 0, "", None),
        ("firmware", 2, "", None),
        ("driver", 2, "x\n", "driver installer pkg.run failed (rc 2): x"),
        ("driver", 124, "", "driver installer killed after 5 s (ascend_driver_install_timeout)"),
        ("firmware", 137, "", "firmware installer killed after 5 s (ascend_driver_install_timeout)"),
        ("firmware", 1, "a\nb\n\nc\n[pkg] ERROR: installation failed (fault injected by the emulator)\n",
         "firmware installer pkg.run failed (rc 1): b / c / [pkg] ERROR: installation failed "
         "(fault injected by the emulator)"),
    ],
    ids=["ok", "firmware-rc-2", "driver-rc-2", "timeout", "timeout-kill", "fault"],
)
def test_install_failure_message(kind: str, rc: int, output: str, message: str | None) -> None:
    assert mod.install_failure(kind, "pkg.run", rc, 5, output) == message


def test_lock_gives_up_after_the_timeout_with_the_message(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    holder = os.open(path, os.O_WRONLY | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    try:
        with pytest.raises(mod.Failure) as failure:
            mod.lock(str(path), 30, sleep=sleep, clock=lambda: now[0])
        assert failure.value.msg == f"an installer still holds {path} after 30 s"
        assert now[0] >= 30  # it waited the whole timeout
    finally:
        os.close(holder)
    fd = mod.lock(str(path), 30, sleep=sleep, clock=lambda: now[0])  # free now: taken at once
    os.close(fd)


class FakeModule:
    """What Node uses of AnsibleModule: params, check_mode, run_command, sha256."""

    def __init__(self, **params: Any):
        self.params = params
        self.check_mode = False

    def run_command(self, argv: list[str]) -> tuple[int, str, str]:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr


INSPECTING_INSTALLER = """#!/bin/sh
for arg in "$@"; do printf '%s\\n' "$arg"; done > "$(dirname "$0")/args"
readlink /proc/$$/fd/* > "$(dirname "$0")/fds" 2>/dev/null
ps -o sid= -p $$ > "$(dirname "$0")/sid"
"""


@needs_timeout
def test_the_installer_runs_in_its_own_session_holding_the_lock(tmp_path: Path) -> None:
    """Why an installer outlives a dropped SSH session with the lock held: its own session, the lock fd."""
    installer = tmp_path / "pkg.run"
    installer.write_text(INSPECTING_INSTALLER)
    installer.chmod(0o700)
    lock_path = tmp_path / "ascend_driver.lock"
    node = mod.Node(FakeModule(install_timeout=60))
    fd = mod.lock(str(lock_path), 5)
    try:
        rc, _ = node.install("driver", str(installer), ["--nox11"], fd)
    finally:
        os.close(fd)
    assert rc == 0
    assert str(lock_path) in (tmp_path / "fds").read_text().split()
    assert int((tmp_path / "sid").read_text()) != os.getsid(0)
    assert (tmp_path / "pkg.run.log").stat().st_mode & 0o777 == 0o600


HANGING_INSTALLER = """#!/bin/sh
sleep 300 &
echo $! > "$(dirname "$0")/child"
echo "installing"
exec sleep 300
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


@needs_timeout
def test_a_hung_installer_is_killed_with_its_children(tmp_path: Path) -> None:
    installer = tmp_path / "pkg.run"
    installer.write_text(HANGING_INSTALLER)
    installer.chmod(0o700)
    node = mod.Node(FakeModule(install_timeout=1))
    fd = mod.lock(str(tmp_path / "lock"), 5)
    try:
        rc, output = node.install("driver", str(installer), [], fd)
    finally:
        os.close(fd)
    assert mod.install_failure("driver", "pkg.run", rc, 1, output) == (
        "driver installer killed after 1 s (ascend_driver_install_timeout)")
    child = int((tmp_path / "child").read_text())
    for _ in range(100):  # a hang guard: the signal is sent when the installer is killed
        if _gone(child):
            break
        time.sleep(0.1)
    assert _gone(child)


def _me() -> tuple[str, str, int, int]:
    user, group = pwd.getpwuid(os.getuid()), grp.getgrgid(os.getgid())
    return user.pw_name, group.gr_name, user.pw_uid, group.gr_gid


def _params(tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    """The module's arguments as the action passes them (the plan decided on the controller)."""
    name, group, uid, gid = _me()
    params = {
        "mode": "install", "version": "24.1.rc3", "firmware_version": "", "firmware_enabled": False,
        "chip": "910b", "arch": "x86_64", "artifact_url": "http://127.0.0.1:1/hdk", "checksums": {},
        "checksum_file": "SHA256SUMS", "download_dir": str(tmp_path / "cache"),
        "install_path": str(tmp_path / "Ascend"), "user": name, "group": group, "uid": uid, "gid": gid,
        "reboot": "auto", "install_timeout": 30, "force": False, "health_gate": False, "expected_chips": 8,
        "lock": str(tmp_path / "lock"), "npu_smi": str(tmp_path / "no-npu-smi"), **overrides,
    }
    return {**params, **driver_plan.node_plan(params)}


def test_a_resumed_run_waits_for_the_orphaned_install_and_installs_nothing(tmp_path: Path) -> None:
    """An installer of a run whose controller died holds the lock; the next run waits for it and
    reads the version it installed: no second install (nothing to download from the dead URL)."""
    holder = os.open(tmp_path / "lock", os.O_WRONLY | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)

    def finish_install() -> None:
        time.sleep(1)
        (tmp_path / "Ascend" / "driver").mkdir(parents=True)
        (tmp_path / "Ascend" / "driver" / "version.info").write_text("Version=24.1.rc3\n")
        os.close(holder)

    worker = threading.Thread(target=finish_install)
    worker.start()
    result: dict[str, Any] = {"installed": [], "reboot_requested": False}
    try:
        mod.converge(mod.Node(FakeModule(**_params(tmp_path))), result)
    finally:
        worker.join()
    assert result["before"]["driver"] == "24.1.rc3"
    assert result["packages"] == [] and result["installed"] == [] and not result["user_created"]


def test_a_run_user_with_other_ids_is_refused_naming_them(tmp_path: Path) -> None:
    name, group, uid, gid = _me()
    node = mod.Node(FakeModule(**_params(tmp_path, uid=uid + 1)))
    with pytest.raises(mod.Failure) as failure:
        node.run_user()
    assert failure.value.msg.startswith(f"{name} has UID '{uid}' and group {group} GID '{gid}' on this node, "
                                        f"but the fleet uses {uid + 1}:{gid}")


def test_check_mode_reports_the_packages_and_touches_nothing(tmp_path: Path) -> None:
    fake = FakeModule(**_params(tmp_path, firmware_enabled=True, firmware_version="7.5.0.2.220",
                                health_gate=True))
    fake.check_mode = True
    result: dict[str, Any] = {"installed": [], "reboot_requested": False}
    mod.converge(mod.Node(fake), result)
    assert result["installed"] == ["Ascend-hdk-910b-npu-driver_24.1.rc3_linux-x86_64.run",
                                   "Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lock"]  # no cache, no install path


SETTINGS = {
    "version": "24.1.rc3", "firmware_version": "7.5.0.2.220", "firmware_enabled": True, "chip": "910b",
    "arch": "", "artifact_url": "http://mirror/hdk", "reboot": "auto", "install_timeout": 1800,
    "health_gate": True, "expected_chips": 8, "version_pattern": r"^[0-9A-Za-z][0-9A-Za-z._-]*$",
    "accelerator_type": "module-910b-8", "known_types": ["module", "module-910b-8"],
}


@pytest.mark.parametrize(
    ("change", "names"),
    [
        ({"version": ""}, "ascend_driver_version (got '')"),
        ({"firmware_version": ""}, "ascend_driver_firmware_version when firmware is enabled (got '')"),
        ({"artifact_url": "ftp://mirror/hdk"}, "ascend_driver_artifact_url (got 'ftp://mirror/hdk')"),
        ({"reboot": "later"}, "ascend_driver_reboot auto|never (got 'later')"),
        ({"install_timeout": 0}, "a positive ascend_driver_install_timeout"),
        ({"install_timeout": "soon"}, "a positive ascend_driver_install_timeout"),
    ],
)
def test_settings_that_cannot_work_are_refused_naming_the_variable(change: dict[str, Any],
                                                                   names: str) -> None:
    problem = action.settings_problem({**SETTINGS, **change})
    assert problem is not None and problem.startswith("ascend_driver settings: need ") and names in problem


def test_good_settings_pass_and_firmware_may_be_off() -> None:
    assert action.settings_problem(SETTINGS) is None
    assert action.settings_problem({**SETTINGS, "firmware_enabled": False, "firmware_version": ""}) is None
    assert action.settings_problem({**SETTINGS, "health_gate": False, "expected_chips": 0}) is None


def test_the_admission_record_names_the_taint_and_the_registration() -> None:
    """Issue 29's no-op shortcut: a node at target skips the admission only while its record matches
    this taint and this registration (kubelet.conf's mtime); never when it has not joined at all."""
    record = mod.admission_record("k:NoSchedule", 123)
    assert mod.admission_needed(record, "k:NoSchedule", 123) is False
    assert mod.admission_needed(None, "k:NoSchedule", 123) is True  # never admitted
    assert mod.admission_needed(record, "k:NoSchedule", 124) is True  # joined again since
    assert mod.admission_needed(record, "other:NoSchedule", 123) is True  # another taint
    assert mod.admission_needed(None, "k:NoSchedule", None) is False  # not joined: no Node, no taint


def test_an_undrained_node_that_needs_a_package_installs_nothing_and_asks_for_a_drain(tmp_path: Path) -> None:
    """The rollout engine did not drain the node (its labels said the target) but it has no driver: nothing
    is downloaded, installed or created; drain_needed sends the play to drain it first (drain_install.yml)."""
    result: dict[str, Any] = {"installed": [], "reboot_requested": False, "drain_needed": False}
    # the run user with other IDs would be refused if it were checked: it is not reached
    mod.converge(mod.Node(FakeModule(**_params(tmp_path, undrained=True, uid=_me()[2] + 1))), result)
    assert result["drain_needed"] is True
    assert result["packages"] == ["Ascend-hdk-910b-npu-driver_24.1.rc3_linux-x86_64.run"]
    assert result["installed"] == [] and "user_created" not in result
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lock"]  # no cache, no install path


def test_an_undrained_node_at_target_is_a_plain_no_op(tmp_path: Path) -> None:
    (tmp_path / "Ascend" / "driver").mkdir(parents=True)
    (tmp_path / "Ascend" / "driver" / "version.info").write_text("Version=24.1.rc3\n")
    result: dict[str, Any] = {"installed": [], "reboot_requested": False, "drain_needed": False}
    mod.converge(mod.Node(FakeModule(**_params(tmp_path, undrained=True))), result)
    assert result["drain_needed"] is False and result["packages"] == [] and result["installed"] == []
