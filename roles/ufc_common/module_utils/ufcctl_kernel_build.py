"""The toolchain a kernel module build needs (DKMS, gcc, make, the running kernel's headers), installed
before an installer that may build one: roles/ascend_driver's driver (issue 44, D18).

Node-side (ansible.module_utils.ufcctl_kernel_build): standard library and ansible.module_utils only.
The Ascend driver package carries kernel modules built for the default kernel of each OS Huawei lists;
on any other kernel its installer builds them with DKMS (docs/reference/ascend.md §6).
"""

from __future__ import annotations

import os

from ansible.module_utils.ufcctl_packages import DPKG_STATUS, missing_packages

MODES = ("auto", "always", "never")
# How each OS family installs packages (the family as dpkg's or rpm's presence says, ansible_os_family's
# names): apt-get for Debian and Ubuntu, dnf for openEuler, Kylin and the other RPM distributions.
INSTALLERS = {
    "Debian": (["apt-get", "install", "-y", "--no-install-recommends"], ["apt-get", "update"]),
    "RedHat": (["dnf", "install", "-y"], None),
}


def needs_build(mode, kernel, prebuilt):
    """Whether the toolchain must be present: `always`, or `auto` on a kernel the package has no
    prebuilt modules for."""
    return mode == "always" or (mode == "auto" and kernel not in (prebuilt or []))


def family(module, status=DPKG_STATUS):
    """"Debian" where dpkg keeps its status file, "RedHat" where rpm exists, else ""."""
    if os.path.exists(status):
        return "Debian"
    return "RedHat" if module.get_bin_path("rpm") else ""


def packages_for(table, os_family, kernel):
    """The family's package names with {kernel} made the running kernel; None for a family not listed."""
    names = (table or {}).get(os_family)
    return None if names is None else [str(n).replace("{kernel}", kernel) for n in names]


class BuildFailure(Exception):
    """The toolchain could not be installed; the message names the packages and what to do (msg and
    extra as roles/ascend_driver's Failure, which its module reports the same way)."""

    def __init__(self, msg):
        super().__init__(msg)
        self.msg = msg
        self.extra = {}


def ensure(module, params, check, status=DPKG_STATUS, kernel=None):
    """Install what is missing of the toolchain for the running kernel when the driver may build
    (params: build_toolchain, prebuilt_kernels, build_packages as the module takes them).
    Returns {kernel, needed, family, packages (the missing ones), installed (bool; check mode: would)}."""
    # the module's argument spec always passes a mode (auto by default); a caller that passes none
    # (the module's unit tests run its install path on the test machine) installs nothing
    mode, prebuilt = params.get("build_toolchain", "never"), params.get("prebuilt_kernels") or []
    table = params.get("build_packages") or {}
    kernel = kernel or os.uname()[2]
    report = {"kernel": kernel, "needed": needs_build(mode, kernel, prebuilt), "family": "", "packages": [],
              "installed": False}
    if not report["needed"]:
        return report
    report["family"] = os_family = family(module, status)
    names = packages_for(table, os_family, kernel)
    if names is None:
        raise BuildFailure(
            f"kernel {kernel} has no prebuilt NPU driver modules, and ascend_driver_build_packages lists no "
            f"packages for OS family {os_family or 'unknown'}: add its DKMS, gcc, make and kernel header "
            "packages there, or set ascend_driver_build_toolchain: never once the node has them")
    missing = missing_packages(module, names, status) if names else []
    report["packages"] = missing = list(missing if missing is not None else names)
    if not missing or check:
        report["installed"] = bool(missing)
        return report
    install, refresh = INSTALLERS.get(os_family, (None, None))
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    rc, out, err = module.run_command(install + missing, environ_update=env) if install else (1, "", "")
    if rc != 0 and refresh is not None:  # a kernel's headers may be newer than the node's package lists
        module.run_command(refresh, environ_update=env)
        rc, out, err = module.run_command(install + missing, environ_update=env)
    if rc != 0:
        last = " / ".join(line.strip() for line in (err or out).splitlines()[-2:] if line.strip())
        raise BuildFailure(
            f"installing {' '.join(missing)} for kernel {kernel} (the driver builds its modules with DKMS on "
            f"a kernel it has none for) failed (rc {rc}): {last[-400:]}; make them installable from the "
            "node's package sources, or install them and set ascend_driver_build_toolchain: never")
    report["installed"] = True
    return report
