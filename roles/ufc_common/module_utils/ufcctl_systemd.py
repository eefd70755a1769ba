"""The state of systemd units, read by every role's node-side probe in one shape.

Node-side: imported by modules as `ansible.module_utils.ufcctl_systemd` (Ansible ships a loaded
role's module_utils/ with the module; every role that uses it lists ufc_common in meta/main.yml).
Standard library only, and Python 3.6+ syntax: it runs with the node's python3.
"""

from __future__ import annotations

UNKNOWN = {"active": "unknown", "enabled": "unknown"}
# `systemctl is-active` exits 0 for these ActiveStates (systemctl-is-active.c)
ACTIVE = ("active", "reloading")
# `systemctl is-enabled` exits 0 for these UnitFileStates (systemctl(1), is-enabled's table)
ENABLED = ("enabled", "enabled-runtime", "alias", "static", "indirect", "generated", "transient")


def _full_name(unit):
    """What systemd calls `unit`: a name without a suffix is a service (`chrony` -> chrony.service)."""
    return unit if "." in unit.rsplit("@", 1)[-1] else unit + ".service"


def unit_states(module, units):
    """unit -> {"active": ActiveState, "enabled": UnitFileState} from one `systemctl show`.

    A unit asked by an alias or without its suffix (`chronyd`, `chrony`) is found through the
    unit's Names. {"active": "unknown", "enabled": "unknown"} when systemctl is missing or fails;
    a unit systemd does not know is "inactive" with an empty UnitFileState, as systemd reports it."""
    if not units:
        return {}
    states = {unit: dict(UNKNOWN) for unit in units}
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        return states
    command = [systemctl, "show", "--property=Id,Names,ActiveState,UnitFileState", "--"] + list(units)
    rc, out, _err = module.run_command(command)
    if rc != 0:
        return states
    for block in out.strip().split("\n\n"):
        fields = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        names = [fields.get("Id", "")] + fields.get("Names", "").split()
        state = {"active": fields.get("ActiveState", ""), "enabled": fields.get("UnitFileState", "")}
        for name in names:
            for unit in units:
                if name in (unit, _full_name(unit)):
                    states[unit] = state
    return states


def is_active(state):
    """What `systemctl is-active --quiet` answers for a unit_states() entry."""
    return state.get("active") in ACTIVE


def is_enabled(state):
    """What `systemctl is-enabled --quiet` answers for a unit_states() entry."""
    return state.get("enabled") in ENABLED
