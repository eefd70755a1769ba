"""The driver's build toolchain (issue 44, D18): on a kernel the driver package has no prebuilt modules
for, its installer builds them with DKMS, so roles/ascend_driver installs dkms, gcc, make and the running
kernel's headers first (roles/ufc_common/module_utils/ufcctl_kernel_build.py), per OS family, only what
dpkg says is missing, nothing in check mode; the controller refuses settings that are not plain names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.pyimports import add_role_module_utils
from ufcctl.domain.npu import driver_plan

add_role_module_utils()
from ansible.module_utils import ufcctl_kernel_build as kb  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "ascend_driver"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
TABLE = DEFAULTS["ascend_driver_build_packages"]
PREBUILT = DEFAULTS["ascend_driver_prebuilt_kernels"]
KERNEL = "6.8.0-45-generic"


class FakeModule:
    def __init__(self, rcs: list[int] | None = None) -> None:
        self.rcs, self.commands = list(rcs or []), []

    def get_bin_path(self, name: str) -> str | None:
        return None

    def run_command(self, argv: list[str], **_: Any) -> tuple[int, str, str]:
        self.commands.append(argv)
        rc = self.rcs.pop(0) if self.rcs else 0
        return rc, "", "E: Unable to locate package linux-headers-x" if rc else ""


def _p(mode: str) -> dict[str, Any]:
    return {"build_toolchain": mode, "prebuilt_kernels": PREBUILT, "build_packages": TABLE}


def _status(tmp_path: Path, installed: list[str]) -> str:
    path = tmp_path / "status"
    path.write_text("".join(f"Package: {n}\nStatus: install ok installed\nVersion: 1\n\n" for n in installed))
    return str(path)


def test_the_default_kernel_needs_nothing(tmp_path: Path) -> None:
    module = FakeModule()
    report = kb.ensure(module, _p("auto"), False, _status(tmp_path, []), kernel="5.15.0-25-generic")
    assert report["needed"] is False and report["packages"] == [] and module.commands == []


def test_another_kernel_gets_what_is_missing_for_it(tmp_path: Path) -> None:
    module = FakeModule()
    report = kb.ensure(module, _p("auto"), False, _status(tmp_path, ["gcc", "make"]), kernel=KERNEL)
    assert report["family"] == "Debian" and report["installed"] is True
    assert report["packages"] == ["dkms", f"linux-headers-{KERNEL}"]
    assert module.commands == [["apt-get", "install", "-y", "--no-install-recommends", "dkms",
                                f"linux-headers-{KERNEL}"]]


def test_check_mode_reports_and_installs_nothing(tmp_path: Path) -> None:
    module = FakeModule()
    report = kb.ensure(module, _p("auto"), True, _status(tmp_path, []), kernel=KERNEL)
    assert report["installed"] is True and module.commands == []  # "would install"
    assert report["packages"] == ["dkms", "gcc", "make", f"linux-headers-{KERNEL}"]


def test_a_rerun_with_the_toolchain_present_changes_nothing(tmp_path: Path) -> None:
    module = FakeModule()
    status = _status(tmp_path, ["dkms", "gcc", "make", f"linux-headers-{KERNEL}"])
    report = kb.ensure(module, _p("auto"), False, status, kernel=KERNEL)
    assert report == {"kernel": KERNEL, "needed": True, "family": "Debian", "packages": [],
                      "installed": False}
    assert module.commands == []


def test_never_leaves_it_to_the_site_and_always_checks_every_kernel(tmp_path: Path) -> None:
    status = _status(tmp_path, [])
    assert kb.ensure(FakeModule(), _p("never"), False, status, kernel=KERNEL)["needed"] is False
    always = kb.ensure(FakeModule(), _p("always"), True, status, kernel="5.15.0-25-generic")
    assert always["needed"] is True and "linux-headers-5.15.0-25-generic" in always["packages"]


def test_stale_package_lists_are_refreshed_once(tmp_path: Path) -> None:
    module = FakeModule(rcs=[100, 0, 0])
    report = kb.ensure(module, _p("auto"), False, _status(tmp_path, []), kernel=KERNEL)
    assert report["installed"] is True
    assert [c[:2] for c in module.commands] == [["apt-get", "install"], ["apt-get", "update"],
                                                ["apt-get", "install"]]


def test_a_failed_install_names_the_packages_and_the_way_out(tmp_path: Path) -> None:
    with pytest.raises(kb.BuildFailure, match=rf"installing dkms gcc make linux-headers-{KERNEL} for kernel "
                       rf"{KERNEL} .* failed \(rc 100\).*ascend_driver_build_toolchain: never"):
        kb.ensure(FakeModule(rcs=[100, 0, 100]), _p("auto"), False, _status(tmp_path, []), kernel=KERNEL)


def test_an_os_family_without_packages_is_named(tmp_path: Path) -> None:
    with pytest.raises(kb.BuildFailure, match="no packages for OS family unknown"):
        kb.ensure(FakeModule(), _p("auto"), False, str(tmp_path / "no-dpkg"), kernel=KERNEL)


def test_rpm_families_get_their_own_names() -> None:
    assert kb.packages_for(TABLE, "RedHat", KERNEL) == ["dkms", "gcc", "make", f"kernel-devel-{KERNEL}",
                                                        f"kernel-headers-{KERNEL}"]


@pytest.mark.parametrize(("args", "problem"), [
    pytest.param({"build_toolchain": "sometimes"}, 'ascend_driver_build_toolchain "sometimes" must be',
                 id="mode"),
    pytest.param({"build_packages": {"Debian": ["--allow-unauthenticated"]}}, "is not a list of package",
                 id="an-option"),
    pytest.param({"build_packages": {"Debian": ["gcc; reboot"]}}, "is not a list of package", id="shell"),
    pytest.param({"build_packages": TABLE, "build_toolchain": "auto"}, None, id="the-defaults"),
])
def test_the_controller_refuses_settings_that_are_not_plain_names(args: dict[str, Any],
                                                                  problem: str | None) -> None:
    found = driver_plan.toolchain_problem(args)
    assert (found is None) if problem is None else (found is not None and problem in found), found


def test_the_role_passes_the_settings_to_its_one_module_run() -> None:
    task = yaml.safe_load((ROLE / "tasks" / "install.yml").read_text())[0]["ufc_ascend_driver"]
    assert task["build_toolchain"] == "{{ ascend_driver_build_toolchain }}"
    assert task["prebuilt_kernels"] == "{{ ascend_driver_prebuilt_kernels }}"
    assert task["build_packages"] == "{{ ascend_driver_build_packages }}"
    assert DEFAULTS["ascend_driver_build_toolchain"] == "auto"


def test_the_module_runs_the_toolchain_step_before_a_driver_install_only(tmp_path: Path) -> None:
    """ufc_ascend_driver calls ensure() when its steps install the driver; nothing without the mode given."""
    text = (ROLE / "library" / "ufc_ascend_driver.py").read_text()
    assert 'if "driver" in [step[0] for step in steps]:' in text
    assert 'result["toolchain"] = ensure(node.module, p, node.check)' in text
    assert kb.ensure(FakeModule(), {}, False, _status(tmp_path, []), kernel=KERNEL)["needed"] is False
