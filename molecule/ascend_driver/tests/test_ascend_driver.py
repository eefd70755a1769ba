"""ascend_driver against the lab NPU emulator: install order, flags, health gate, faults (idempotence:
tests/integration/test_upgrade_drivers_lab.py).

The tests run in file order and share one instance: the first checks converge's install, the
later ones change faults and versions and rerun converge.yml with extra vars.
"""

from __future__ import annotations

import json

import pytest

V1 = {"ascend_driver_version": "24.1.rc2", "ascend_driver_firmware_version": "7.5.0.1.129"}
V2 = {"ascend_driver_version": "24.1.rc3", "ascend_driver_firmware_version": "7.5.0.2.220"}
FAULTS = "/etc/ufc-npu-emulator.json"
INSTALLS = "/var/lib/ufc-npu-emulator/installs.log"
SECLOG = "/var/log/ascend_seclog/ascend_install.log"
DRIVER_V2 = "Ascend-hdk-910b-npu-driver_24.1.rc3_linux-x86_64.run"


def _installs(host) -> list[str]:
    return host.file(INSTALLS).content_string.splitlines()


def _started(host) -> list[str]:
    """'<kind> <version> <mode>' of every installer start, in order (the emulator's log)."""
    return [" ".join(line.split()[2:5]) for line in host.file(SECLOG).content_string.splitlines()
            if line.split()[1] == "start"]


def _version(host, kind: str) -> str:
    return host.check_output(f"sed -n 's/^Version=//p' /usr/local/Ascend/{kind}/version.info")


@pytest.fixture
def faults(host):
    """Write the emulator's fault file for one test, remove it afterwards."""

    def write(**values: object) -> None:
        host.run_test(f"printf '%s' {json.dumps(json.dumps(values))} > {FAULTS}")

    yield write
    host.run(f"rm -f {FAULTS}")


def test_first_install_is_driver_then_firmware_with_full_flags(host) -> None:
    assert _version(host, "driver") == "24.1.rc2"
    assert _version(host, "firmware") == "7.5.0.1.129"
    assert _started(host) == ["driver 24.1.rc2 --full", "firmware 7.5.0.1.129 --full"]
    info = host.file("/etc/ascend_install.info").content_string
    assert "UserName=HwHiAiUser" in info and "UserGroup=HwHiAiUser" in info


def test_converge_installed_each_package_once(host) -> None:
    installed = [line.split()[:2] for line in _installs(host)]
    assert installed == [["driver", "24.1.rc2"], ["firmware", "7.5.0.1.129"]]


def test_run_user_has_the_fleet_ids(host) -> None:
    user = host.user("HwHiAiUser")
    assert user.uid == 1000 and user.gid == 1000 and host.group("HwHiAiUser").gid == 1000


def test_npu_smi_reports_eight_healthy_chips(host) -> None:
    out = host.check_output("/usr/local/sbin/npu-smi info")
    assert "Version: 24.1.rc2" in out
    assert out.count("| OK ") == 8


def test_packages_were_fetched_and_a_record_written(host) -> None:
    cached = host.file("/var/cache/ascend_driver/Ascend-hdk-910b-npu-driver_24.1.rc2_linux-x86_64.run")
    assert cached.exists and cached.mode == 0o700
    record = json.loads(host.file("/usr/local/Ascend/ufcctl-install.json").content_string)
    assert record["driver_version"] == "24.1.rc2"
    assert "SHA256SUMS" in " ".join(record["verified_against"].values())


def test_unhealthy_chip_fails_the_health_gate(host, run_playbook, faults) -> None:
    faults(unhealthy_chips=[3])
    run = run_playbook(extra_vars=V1)
    assert run.rc != 0
    assert "health gate: chips not OK: 3 Critical" in run.output


def test_failing_firmware_upgrade_stops_before_the_driver(host, run_playbook, faults) -> None:
    faults(fail="firmware")
    run = run_playbook(extra_vars=V2)
    assert run.rc != 0 and "fault injected by the emulator" in run.output
    assert _version(host, "driver") == "24.1.rc2"  # firmware goes first on an upgrade
    assert _started(host)[-1] == "firmware 7.5.0.2.220 --upgrade"


def test_hung_installer_is_killed_and_fails_the_node(host, run_playbook, faults) -> None:
    faults(hang="driver")
    run = run_playbook(extra_vars={**V1, "ascend_driver_force": True, "ascend_driver_install_timeout": 5,
                                   "ascend_driver_firmware_enabled": False})
    assert run.rc != 0 and "driver installer killed after 5 s" in run.output
    assert host.run("pgrep -f '^sleep infinity$'").rc == 1  # the installer and its children are gone


def test_wrong_checksum_installs_nothing(host, run_playbook) -> None:
    before = _installs(host)
    run = run_playbook(extra_vars={**V2, "ascend_driver_checksums": {DRIVER_V2: "0" * 64}})
    assert run.rc != 0 and "checksum" in run.output.lower()
    assert _installs(host) == before


def test_uid_taken_differently_is_refused(host, run_playbook) -> None:
    host.run_test("usermod -u 1234 HwHiAiUser")
    try:
        run = run_playbook(extra_vars=V1)
        assert run.rc != 0 and "HwHiAiUser has UID '1234'" in run.output
    finally:
        host.run_test("usermod -u 1000 HwHiAiUser")


def test_check_mode_reports_an_upgrade_and_installs_nothing(host, run_playbook) -> None:
    before = _installs(host)
    run = run_playbook(extra_vars=V2, check=True)
    assert run.rc == 0 and "installed: " + DRIVER_V2 in run.output
    assert _installs(host) == before and _version(host, "driver") == "24.1.rc2"


def test_upgrade_is_firmware_then_driver_with_upgrade_flags(host, run_playbook) -> None:
    run = run_playbook(extra_vars=V2)
    assert run.rc == 0, run.output[-3000:]
    assert _version(host, "driver") == "24.1.rc3" and _version(host, "firmware") == "7.5.0.2.220"
    done = [line.split()[:3] for line in _installs(host)][-2:]
    assert done == [["firmware", "7.5.0.2.220", "upgrade"], ["driver", "24.1.rc3", "upgrade"]]
    assert "Version: 24.1.rc3" in host.check_output("/usr/local/sbin/npu-smi info")


def test_second_run_at_target_changes_nothing(host, run_playbook) -> None:
    before = _installs(host)
    run = run_playbook(extra_vars=V2)
    assert run.rc == 0 and "already at target" in run.output
    assert "changed=0" in run.output
    assert _installs(host) == before


def test_reboot_never_leaves_the_node_up(host, run_playbook, faults) -> None:
    faults(reboot_required=True)
    pid1_started = host.check_output("ps -o lstart= -p 1")
    run = run_playbook(extra_vars={**V2, "ascend_driver_force": True, "ascend_driver_reboot": "never",
                                   "ascend_driver_firmware_enabled": False})
    assert run.rc == 0, run.output[-3000:]
    assert "reboot needed: ascend_driver_reboot is never" in run.output
    assert host.check_output("ps -o lstart= -p 1") == pid1_started  # no reboot happened
