#!/usr/bin/python
"""Apply the sysctl values this node's kernel lets it set, and say why each other key was skipped."""

from __future__ import annotations

import errno
import os

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: node_tuning_sysctl
short_description: Set kernel parameters through /proc/sys, reporting the ones that cannot be set
description:
  - For every key, reads /proc/sys, decides whether this node may set it, writes it if it differs
    and reads it back. One module run per host for the whole profile.
  - A key is skipped, with a reason, when it is absent from this kernel (module not loaded, or a
    host-only key seen from a network namespace), read-only here, or kernel-global while the
    node is a container (writing it would change the container host).
  - Keys in C(floor_keys) are never lowered, only raised to the wanted value.
  - Check mode reports what would be set and writes nothing.
options:
  settings: {type: dict, required: true, description: "sysctl key -> wanted value, in file order"}
  floor_keys: {type: list, elements: str, default: [], description: Integer keys only ever raised.}
  container: {type: bool, default: false, description: The node is a container.}
"""

RETURN = r"""
settings:
  description: One entry per key with key, wanted, value (to persist), before, status
    (set, ok, skipped), reason and line (plain, optional, commented) for the sysctl.d file.
  type: list
  returned: always
skipped_keys: {description: '"key: reason" for every skipped key.', type: list, returned: always}
"""

PROC_SYS = "/proc/sys"


def sysctl_path(key: str, root: str = PROC_SYS) -> str:
    """`net.ipv4.tcp_rmem` -> /proc/sys/net/ipv4/tcp_rmem; keys written with '/' map directly."""
    relative = key if "/" in key else key.replace(".", "/")
    return os.path.join(root, relative)


def normalize(value: object) -> str:
    """Compare values the way the kernel prints them: fields separated by single spaces."""
    if isinstance(value, bool):
        value = int(value)
    return " ".join(str(value).split())


def floor_value(wanted: str, current: str) -> str:
    """The larger of two integer values; non-integers keep the wanted value."""
    try:
        return str(max(int(wanted), int(current)))
    except ValueError:
        return wanted


def is_kernel_global(key: str) -> bool:
    """Keys outside net.* belong to the whole kernel. Inside a network namespace the kernel shows
    only the net.* keys that namespace owns, so a visible net.* key is the container's own."""
    return not key.replace("/", ".").startswith("net.")


GLOBAL_IN_CONTAINER = "kernel-global: from a container it would change the container host; set it on the host"


def plan_key(key: str, wanted: object, floor: bool, container: bool, root: str = PROC_SYS) -> dict:
    """Decide what to do with one key without writing anything."""
    # line: how the sysctl.d file carries the key. "plain" for keys set or already right here,
    # "optional" ("-" prefix: systemd-sysctl ignores a failure) for keys skipped here, "commented"
    # for kernel-global keys on a container.
    entry = {"key": key, "wanted": normalize(wanted), "before": None, "reason": "", "line": "plain"}
    entry["value"] = entry["wanted"]
    host_owned = container and is_kernel_global(key)
    if host_owned:
        entry["line"] = "commented"  # systemd-sysctl at container boot would otherwise set it on the host
    path = sysctl_path(key, root)
    try:
        with open(path) as handle:
            entry["before"] = normalize(handle.read())
    except FileNotFoundError:
        if host_owned:
            return {**entry, "status": "skipped", "reason": GLOBAL_IN_CONTAINER}
        if container:
            reason = "absent from the network namespace of this container (host-only key, module not loaded)"
        else:
            reason = "absent from this kernel (its module is not loaded, or the kernel lacks it)"
        return {**entry, "status": "skipped", "reason": reason, "line": "optional"}
    except OSError as exc:
        return {**entry, "status": "skipped", "reason": f"unreadable: {exc.strerror}", "line": "optional"}
    if floor:
        entry["value"] = floor_value(entry["wanted"], entry["before"])
    if entry["before"] == entry["value"]:
        return {**entry, "status": "ok"}
    if host_owned:
        return {**entry, "status": "skipped", "reason": GLOBAL_IN_CONTAINER}
    if not os.access(path, os.W_OK):
        reason = (
            "read-only in this container: /proc/sys is mounted read-only, or only the host may change it"
            if container
            else "not writable (needs root: become)"
        )
        return {**entry, "status": "skipped", "reason": reason, "line": "optional"}
    return {**entry, "status": "set"}


def write_key(entry: dict, root: str = PROC_SYS) -> dict:
    """Write a planned key and read it back. Permission errors skip; the kernel rejecting a
    value raises ValueError (a wrong profile, not a property of the node)."""
    path = sysctl_path(entry["key"], root)
    try:
        with open(path, "w") as handle:
            handle.write(entry["value"] + "\n")
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.EACCES, errno.EROFS):
            reason = f"kernel refused the write: {exc.strerror}"
            return {**entry, "status": "skipped", "reason": reason, "line": "optional"}
        raise ValueError(f"the kernel rejected {entry['key']} = {entry['value']}: {exc.strerror}") from exc
    with open(path) as handle:
        stored = normalize(handle.read())
    if stored != entry["value"]:
        raise ValueError(f"the kernel stored {entry['key']} = {stored!r} after writing {entry['value']!r}")
    return entry


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "settings": {"type": "dict", "required": True},
            "floor_keys": {"type": "list", "elements": "str", "default": []},
            "container": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    floors = set(module.params["floor_keys"])
    results = []
    for key, wanted in module.params["settings"].items():
        entry = plan_key(key, wanted, key in floors, module.params["container"])
        if entry["status"] == "set" and not module.check_mode:
            try:
                entry = write_key(entry)
            except ValueError as exc:
                fix = "correct it in node_tuning_sysctl or node_tuning_sysctl_extra"
                module.fail_json(msg=f"{exc} -> fix: {fix}", settings=results)
        results.append(entry)
    skipped = [f"{e['key']}: {e['reason']}" for e in results if e["status"] == "skipped"]
    changed_entries = [e for e in results if e["status"] == "set"]
    diff = {
        "before": "".join(f"{e['key']} = {e['before']}\n" for e in changed_entries),
        "after": "".join(f"{e['key']} = {e['value']}\n" for e in changed_entries),
    }
    module.exit_json(changed=bool(changed_entries), settings=results, skipped_keys=skipped, diff=diff)


if __name__ == "__main__":
    main()
