"""Action `ufc_ascend_driver`: check roles/ascend_driver's settings on the controller, then do the node's
work in one module run (roles/ascend_driver/library/ufc_ascend_driver.py).

Settings that fail a check fail the node here, before anything runs on it, with a message naming the
variable; the module runs only with settings that passed. The checks were three assert tasks (a forked
worker each, per node); here they cost nothing beyond the task that runs the module anyway.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ansible.plugins.action import ActionBase

MODULE = "ansible.legacy.ufc_ascend_driver"
# Arguments only the controller reads: they are not passed to the module.
CONTROLLER_ONLY = ("version_pattern", "accelerator_type", "known_types")


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
    if args.get("health_gate") and int(args.get("expected_chips") or 0) <= 0:
        known = ", ".join(str(t) for t in args.get("known_types") or [])
        return (f"npu_accelerator_type '{args.get('accelerator_type') or ''}' has no chip count (known: "
                f"{known}): use one of these types, set ascend_driver_expected_chips for this host, or add "
                "the type to ascend_driver_chips_by_type")
    return None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        # the health-only run after a reboot follows an install run whose settings passed
        problem = None if args.get("mode") == "health" else settings_problem(args)
        if problem:
            return {**result, "failed": True, "msg": problem}
        module_args = {key: value for key, value in args.items() if key not in CONTROLLER_ONLY}
        module_result = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        return {**result, **module_result}
