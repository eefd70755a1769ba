"""ufcctl/domain/npu/driver_plan.py: the plan the controller sends for every state a node can be in is
the plan of the versions the node actually has (what the module ran before it moved here)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.helpers.pyimports import load_file
from ufcctl.domain.npu import driver_plan

ROOT = Path(__file__).resolve().parents[4]
module = load_file(ROOT / "roles" / "ascend_driver" / "library" / "ufc_ascend_driver.py", "ascend_driver_m")
WANT = {"version": "24.1.rc3", "firmware_version": "7.5.0.2.220", "chip": "910b", "arch": "",
        "user": "HwHiAiUser", "group": "HwHiAiUser"}
DRIVERS = ("", "24.1.rc3", "24.1.rc2", "23.0.0")
FIRMWARES = ("", "7.5.0.2.220", "7.5.0.1.129")


@pytest.mark.parametrize(("enabled", "force"), itertools.product((True, False), (False, True)))
def test_the_nodes_lookup_gives_the_plan_of_its_versions(enabled: bool, force: bool) -> None:
    settings = {**WANT, "firmware_enabled": enabled, "force": force}
    sent = driver_plan.node_plan(settings)
    for driver, firmware in itertools.product(DRIVERS, FIRMWARES):
        want = WANT["version"], WANT["firmware_version"]
        looked_up = module.steps_for(sent["plan"], driver, firmware, *want)
        expected = driver_plan.plan(driver, firmware, *want, enabled, force, WANT["user"], WANT["group"])
        assert looked_up == expected, (driver, firmware)


def test_package_names_leave_the_arch_to_the_node_unless_set() -> None:
    names = driver_plan.node_plan({**WANT, "firmware_enabled": True})["package_names"]
    assert names == {"driver": "Ascend-hdk-910b-npu-driver_24.1.rc3_linux-{arch}.run",
                     "firmware": "Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run"}
    fixed = driver_plan.node_plan({**WANT, "arch": "aarch64"})["package_names"]
    assert fixed["driver"].endswith("_linux-aarch64.run")
    as_text = driver_plan.node_plan({**WANT, "force": "false"})
    assert as_text == driver_plan.node_plan({**WANT, "force": False})
