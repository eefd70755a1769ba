#!/usr/bin/python
"""What apiserver_lb needs to know about a host, in one module run that changes nothing."""

from __future__ import annotations

import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ufcctl_packages import missing_packages
from ansible.module_utils.ufcctl_systemd import is_active, is_enabled, unit_states

DOCUMENTATION = r"""
module: apiserver_lb_probe
short_description: Read the VIP interface's address, PID 1's descriptor limit, packages and services
description:
  - Replaces a network fact-gathering run, a command reading /proc/1/limits, and the package and
    service tasks' own checks on a converged host with one module run (check mode runs it too).
  - I(address) is the interface's first IPv4 address that is not a secondary (the one Ansible's
    C(ansible_<interface>.ipv4) fact names); a VIP keepalived adds later does not replace it.
  - I(hard_nofile) is PID 1's hard "Max open files" limit, which caps a unit's LimitNOFILE.
  - I(missing_packages) lists the I(packages) the package database does not have installed (dpkg or
    rpm); it is null when neither tool exists, so the caller installs to be sure.
  - I(services) says, per unit of I(services), whether systemd has it active and enabled.
options:
  interface: {description: Interface that carries the VIP., type: str, required: true}
  packages: {description: Distribution packages the role installs., type: list, elements: str, default: []}
  services: {description: systemd units the role starts and enables., type: list, elements: str, default: []}
"""

RETURN = r"""
address:
  description: The interface's primary IPv4 address ('' when it has none or does not exist).
  type: str
  returned: always
hard_nofile:
  description: PID 1's hard descriptor limit (a number or "unlimited"; '' when unreadable).
  type: str
  returned: always
missing_packages: {description: Packages not installed (null - unknown)., type: list, returned: always}
services: {description: "unit -> {active: bool, enabled: bool}", type: dict, returned: always}
"""

INET = re.compile(r"\binet\s+(?P<address>[0-9.]+)/\d+(?P<rest>.*)$")


def interface_address(module: AnsibleModule, interface: str) -> str:
    ip = module.get_bin_path("ip")
    if not ip:
        return ""
    rc, out, _ = module.run_command([ip, "-o", "-4", "addr", "show", "dev", interface])
    for line in out.splitlines() if rc == 0 else []:
        match = INET.search(line)
        if match and "secondary" not in match.group("rest").split():
            return match.group("address")
    return ""


def hard_nofile() -> str:
    try:
        with open("/proc/1/limits") as limits:
            for line in limits:
                if line.startswith("Max open files"):
                    return line.split()[4]
    except OSError:
        pass
    return ""


def services(module: AnsibleModule, units: list) -> dict:
    """unit -> {active, enabled} as booleans (what `systemctl is-active/is-enabled --quiet` answer)."""
    return {unit: {"active": is_active(state), "enabled": is_enabled(state)}
            for unit, state in unit_states(module, units).items()}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "interface": {"type": "str", "required": True},
            "packages": {"type": "list", "elements": "str", "default": []},
            "services": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    module.exit_json(
        changed=False,
        address=interface_address(module, module.params["interface"]),
        hard_nofile=hard_nofile(),
        missing_packages=missing_packages(module, module.params["packages"]),
        services=services(module, module.params["services"]),
    )


if __name__ == "__main__":
    main()
