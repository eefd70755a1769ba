#!/usr/bin/python
"""Node side of kube_node's removal (tasks/remove.yml): probe the join state, kubeadm reset, stop and
disable the node's services, wipe what is left; one module run."""

from __future__ import annotations

import os
import re
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ufcctl_systemd import is_active, unit_states

DOCUMENTATION = r"""
module: ufcctl_node_leave
short_description: Take a worker out of its cluster on the node (kubeadm reset, services stopped, state wiped)
description:
  - Probes the node once - which of I(paths) hold anything, whether I(services) are active or enabled,
    whether this is a control plane (C(/etc/kubernetes/admin.conf) or a kube-apiserver manifest).
  - Refuses a control plane unless I(allow_control_plane) (its etcd member and apiserver need the
    control-plane procedure, not a worker's reset).
  - When any join state is there, runs C(kubeadm reset -f --cri-socket I(cri_socket)) (the kubelet is
    stopped, kubeadm's files and the contents of /var/lib/kubelet and /etc/kubernetes/pki deleted,
    containers removed through the CRI while the runtime still runs), then stops and disables each of
    I(services) that is active or enabled, then deletes whatever of I(paths) is left.
  - >-
    Nothing else is touched: packages, binaries, the NPU driver and firmware, CNI configuration.
  - A node with nothing left to do is unchanged; check mode reports what would be done.
options:
  paths:
    description: The join state to wipe (files or directories; each deleted whole).
    type: list
    elements: path
    required: true
  services:
    description: systemd units to stop and disable, in this order, after the reset.
    type: list
    elements: str
    default: [kubelet, containerd]
  kubeadm: {description: kubeadm command (a name on the PATH or a path)., type: str, default: kubeadm}
  cri_socket: {description: The container runtime socket kubeadm reset uses., type: str, default: "unix:///run/containerd/containerd.sock"}
  allow_control_plane: {description: Act on a control plane too., type: bool, default: false}
"""

RETURN = r"""
reset: {description: kubeadm reset ran (or would)., type: bool, returned: always}
stopped: {description: Units stopped or disabled (or that would be)., type: list, returned: always}
removed: {description: Paths deleted (or that would be)., type: list, returned: always}
"""

ADMIN_CONF = "/etc/kubernetes/admin.conf"
APISERVER_MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml"


def _holds_something(path: str) -> bool:
    if os.path.isdir(path) and not os.path.islink(path):
        return any(True for _ in os.scandir(path))
    return os.path.lexists(path)


# the UnitFileStates `systemctl disable` changes (static, indirect, alias... units cannot be disabled)
DISABLABLE = ("enabled", "enabled-runtime")


def _unit_states(module: AnsibleModule, units: list[str]) -> list[tuple[str, bool, bool]]:
    """(unit, active, enabled) of each, one `systemctl show` (ufcctl_systemd); a unit systemd does not
    know is neither."""
    states = unit_states(module, units)
    return [(unit, is_active(states[unit]), states[unit]["enabled"] in DISABLABLE) for unit in units]


MOUNTINFO = "/proc/self/mountinfo"


def _mount_points() -> set[str]:
    """Every mount point of this mount namespace. Not os.path.ismount: a folder bind-mounted onto itself
    has its parent's device, and ismount says False (the kubelet's /var/lib/kubelet in a lab node)."""
    try:
        with open(MOUNTINFO, encoding="utf-8") as lines:
            # field 5 is the mount point, with space, tab, newline and backslash as octal escapes
            fields = (line.split() for line in lines)
            return {re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), f[4]) for f in fields if len(f) > 4}
    except OSError:
        return set()


def _remove(path: str, mounts: set[str]) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        if os.path.realpath(path) in mounts:
            # a kubelet whose root mount is not shared bind-mounts /var/lib/kubelet onto itself to make it
            # shared (a node in a container; some minimal OSes): the folder stays, emptied ("Device or
            # resource busy" otherwise); kubeadm reset has unmounted what the pods mounted inside it
            for entry in os.scandir(path):
                _remove(entry.path, mounts)
            return
        shutil.rmtree(path)
    else:
        os.unlink(path)


def leave(module: AnsibleModule) -> dict:
    """Probe, then (unless check mode or nothing to do) reset, stop and disable, wipe; the result."""
    params = module.params
    if not params["allow_control_plane"] and any(os.path.exists(p) for p in (ADMIN_CONF, APISERVER_MANIFEST)):
        module.fail_json(msg=f"this host is a control plane ({ADMIN_CONF} or {APISERVER_MANIFEST} exists): "
                             "a worker's removal would take its apiserver down; nothing was touched")
    joined = [p for p in params["paths"] if _holds_something(p)]
    units = _unit_states(module, params["services"])
    to_stop = [u for u, active, enabled in units if active or enabled]
    kubeadm = module.get_bin_path(params["kubeadm"])
    result = {"changed": bool(joined or to_stop), "reset": bool(joined and kubeadm), "stopped": to_stop,
              "removed": joined}
    if module.check_mode or not result["changed"]:
        return result
    if joined and kubeadm:
        rc, out, err = module.run_command([kubeadm, "reset", "-f", f"--cri-socket={params['cri_socket']}"])
        if rc != 0:
            module.fail_json(msg=f"kubeadm reset -f failed (rc {rc}): {(err or out).strip()[-2000:]}",
                             **result)
    for unit, active, enabled in units:
        for wanted, verb in ((active, "stop"), (enabled, "disable")):
            if wanted:
                rc, out, err = module.run_command(["systemctl", verb, unit])
                if rc != 0:
                    module.fail_json(msg=f"systemctl {verb} {unit} failed (rc {rc}): {(err or out).strip()}",
                                     **result)
    mounts = _mount_points()  # read once, after kubeadm reset unmounted what the pods had mounted
    for path in params["paths"]:
        if os.path.lexists(path):
            _remove(path, mounts)
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "paths": {"type": "list", "elements": "path", "required": True},
            "services": {"type": "list", "elements": "str", "default": ["kubelet", "containerd"]},
            "kubeadm": {"type": "str", "default": "kubeadm"},
            "cri_socket": {"type": "str", "default": "unix:///run/containerd/containerd.sock"},
            "allow_control_plane": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    module.exit_json(**leave(module))


if __name__ == "__main__":
    main()
