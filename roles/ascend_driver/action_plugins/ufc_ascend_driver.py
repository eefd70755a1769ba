"""Action `ufc_ascend_driver`: check roles/ascend_driver's settings and decide its install plan on the
controller (ufcctl/domain/npu/driver_plan.py), then do the node's work in one module run
(roles/ascend_driver/library/ufc_ascend_driver.py: probe, lock, download, run the plan, health gate).

Settings that fail a check fail the node here, before anything runs on it, with a message naming the
variable; the module runs only with settings that passed. The checks were three assert tasks (a forked
worker each, per node); here they cost nothing beyond the task that runs the module anyway. The plan
goes to the module for each state the node can be in (the module reads the versions under its lock).
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

from ufcctl.domain.npu.driver_plan import node_plan, settings_problem

MODULE = "ansible.legacy.ufc_ascend_driver"
# Arguments only the controller reads: they are not passed to the module.
CONTROLLER_ONLY = ("version_pattern", "accelerator_type", "known_types")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        # the health-only run after a reboot follows an install run whose settings passed; the
        # admission's probe and record, and the fabric check (npu check), install nothing
        installs = args.get("mode") not in ("health", "probe", "admitted", "fabric")
        problem = settings_problem(args) if installs else None
        if problem:
            return {**result, "failed": True, "msg": problem}
        module_args = {key: value for key, value in args.items() if key not in CONTROLLER_ONLY}
        if args.get("mode", "install") == "install":
            module_args.update(node_plan(args))
        module_result = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        return {**result, **module_result}
