"""roles/ascend_driver's decisions, taken on the controller by the role's action plugin
(roles/ascend_driver/action_plugins/ufc_ascend_driver.py). Pure.

- settings_problem: whether the role's settings can be used at all (a failing node fails before
  anything runs on it);
- plan: the installers a node runs, in order, with their flags, given the versions it has;
- node_plan: the same for every state a node can be found in, as the module's arguments. The
  versions are read by the node module under its install lock (an installer orphaned by a dropped
  SSH session finishes first), so the controller cannot know them beforehand: it sends the plan of
  each state (nothing installed, the wanted version, another version; for the driver and the
  firmware) and the module runs the one of the state it finds. One module run per node, as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# what a node has of one package: nothing, the wanted version, another one (the module's steps_for
# in roles/ascend_driver/library/ufc_ascend_driver.py tells them apart on the node)
STATES = ("none", "current", "other")
ARCH = "{arch}"  # in node_plan's package names: the node's `uname -m` when the settings name no arch
# ascend_driver_build_toolchain (roles/ufc_common/module_utils/ufcctl_kernel_build.py), and a package name
# of ascend_driver_build_packages: an argument of root's apt-get or dnf, so a plain name ({kernel}: uname -r)
TOOLCHAIN_MODES = ("auto", "always", "never")
PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+_-]*(?:\{kernel\}[A-Za-z0-9.+_-]*)?")


def settings_problem(args: Mapping[str, Any]) -> str | None:
    """Why the settings cannot be used (the first check that failed), or None."""
    firmware_enabled = bool(args.get("firmware_enabled"))
    version, firmware = str(args.get("version") or ""), str(args.get("firmware_version") or "")
    url, reboot = str(args.get("artifact_url") or ""), str(args.get("reboot") or "")
    try:
        timeout = int(args.get("install_timeout") or 0)
    except (TypeError, ValueError):
        timeout = 0
    if (not version or (firmware_enabled and not firmware) or not re.match(r"^https?://", url)
            or reboot not in ("auto", "never") or timeout <= 0):
        return (
            f"ascend_driver settings: need ascend_driver_version (got '{version}'), "
            f"ascend_driver_firmware_version when firmware is enabled (got '{firmware}'), "
            f"an http(s) ascend_driver_artifact_url (got '{url}'), "
            f"ascend_driver_reboot auto|never (got '{reboot}') and a positive "
            "ascend_driver_install_timeout; set them in the inventory (group_vars of npu_node)"
        )
    # These values become parts of file names and arguments of root's installer, so they must be
    # plain words; the pattern is ufcctl's own (ufcctl/domain/versions.py, in vars/main/generated.yml).
    pattern = str(args.get("version_pattern") or "")
    words = [("ascend_driver_version", version),
             ("ascend_driver_firmware_version", firmware if firmware_enabled else ""),
             ("ascend_driver_chip", str(args.get("chip") or "")),
             ("ascend_driver_arch", str(args.get("arch") or ""))]
    for name, value in words:
        # empty: not used (firmware disabled, arch from the node)
        if value and not re.fullmatch(pattern, value):
            return (f"{name} {json.dumps(value)} is not a plain word: use letters, digits, '.', '_' and '-', "
                    "starting with a letter or digit")
    problem = toolchain_problem(args)
    if problem:
        return problem
    if args.get("health_gate") and int(args.get("expected_chips") or 0) <= 0:
        known = ", ".join(str(t) for t in args.get("known_types") or [])
        return (f"npu_accelerator_type '{args.get('accelerator_type') or ''}' has no chip count (known: "
                f"{known}): use one of these types, set ascend_driver_expected_chips for this host, or add "
                "the type to ascend_driver_chips_by_type")
    return None


def toolchain_problem(args: Mapping[str, Any]) -> str | None:
    """ascend_driver_build_toolchain is a mode and every build package a plain name (issue 44, D18)."""
    mode = args.get("build_toolchain", "auto")
    if mode not in TOOLCHAIN_MODES:
        return f"ascend_driver_build_toolchain {json.dumps(mode)} must be one of {', '.join(TOOLCHAIN_MODES)}"
    table = args.get("build_packages") or {}
    if not isinstance(table, Mapping):
        return "ascend_driver_build_packages must map an OS family (Debian, RedHat) to package names"
    for family, names in table.items():
        plain = isinstance(names, list) and all(isinstance(n, str) and PACKAGE.fullmatch(n) for n in names)
        if not plain:
            return (f"ascend_driver_build_packages {family}: {json.dumps(names)[:80]} is not a list of "
                    "package names (letters, digits, '.', '+', '_', '-', one {kernel}; no leading '-')")
    return None


def package_names(chip: str, driver: str, firmware: str, arch: str) -> tuple[str, str]:
    """The driver's and the firmware's installer file names, as Huawei publishes them."""
    return (f"Ascend-hdk-{chip}-npu-driver_{driver}_linux-{arch}.run",
            f"Ascend-hdk-{chip}-npu-firmware_{firmware}.run")


def plan(installed_driver: str, installed_firmware: str, want_driver: str, want_firmware: str,
         firmware_enabled: bool, force: bool, user: str, group: str) -> list[tuple[str, str, list[str]]]:
    """The installs a node needs, in order: [(kind, target version, installer flags)].

    Flags as ascend-deployer uses them (docs/reference/ascend.md §6): a first driver install is
    --full --install-for-all with the run user (--install-for-all lets non-root tools such as the
    NPU exporter use the driver), an upgrade --upgrade. CANN install guide: a first install goes
    driver then firmware, an upgrade or reinstall firmware then driver; the firmware goes first only
    when both are installed already."""
    needs_driver = force or installed_driver != want_driver
    needs_firmware = firmware_enabled and (force or installed_firmware != want_firmware)
    if installed_driver:
        driver_flags = ["--nox11", "--upgrade", "--quiet"]
    else:
        driver_flags = ["--nox11", "--full", "--install-for-all", "--install-username=" + user,
                        "--install-usergroup=" + group, "--quiet"]
    firmware_flags = ["--nox11", "--upgrade" if installed_firmware else "--full", "--quiet"]
    steps: list[tuple[str, str, list[str]]] = []
    if needs_driver:
        steps.append(("driver", want_driver, driver_flags))
    if needs_firmware:
        firmware = ("firmware", want_firmware, firmware_flags)
        first = installed_driver != "" and installed_firmware != ""
        if first:
            steps.insert(0, firmware)
        else:
            steps.append(firmware)
    return steps


def _example(which: str, want: str) -> str:
    """An installed version in state `which` (plan() reads only the state of what is installed)."""
    return {"none": "", "current": want}.get(which, want + "~other")


def module_bool(value: Any) -> bool:
    """A boolean module argument as the module reads it (Ansible's bool conversion: "yes", "1", ...)."""
    return value is True or str(value).strip().lower() in ("true", "yes", "on", "1", "y", "t")


def node_plan(args: Mapping[str, Any]) -> dict[str, Any]:
    """The module's `plan` and `package_names` arguments for these settings: "<driver state>/<firmware
    state>" -> the steps of plan() as [kind, version, flags]; kind -> installer file name (ARCH in it
    when the settings leave the arch to the node)."""
    driver, firmware = str(args.get("version") or ""), str(args.get("firmware_version") or "")
    enabled, force = module_bool(args.get("firmware_enabled")), module_bool(args.get("force"))
    user, group = str(args.get("user") or ""), str(args.get("group") or "")
    table = {}
    for d in STATES:
        for f in STATES:
            found = _example(d, driver), _example(f, firmware)
            steps = plan(*found, driver, firmware, enabled, force, user, group)
            table[f"{d}/{f}"] = [[kind, version, flags] for kind, version, flags in steps]
    driver_name, firmware_name = package_names(
        str(args.get("chip") or ""), driver, firmware, str(args.get("arch") or "") or ARCH)
    return {"plan": table, "package_names": {"driver": driver_name, "firmware": firmware_name}}
