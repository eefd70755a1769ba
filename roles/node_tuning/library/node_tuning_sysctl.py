#!/usr/bin/python
"""Apply the sysctl values this node's kernel lets it set, say how boot should carry each key, and why
keys were skipped."""

from __future__ import annotations

import errno
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.facts.virtual.linux import LinuxVirtualCollector

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
  - >-
    Returns, per key, how the role's sysctl.d template carries it for boot (C(line): plain, optional or
    commented): that depends on what this node allowed, so the file (roles/node_tuning/templates/
    sysctl.conf.j2, written by the next task) can only be rendered from this module's result.
  - Skipped keys are reported as one warning naming C(host) and every key with its reason.
  - >-
    Before the keys, loads every kernel module of C(modules) that C(/sys/module) does not list (modprobe),
    so keys under it (net.bridge.* of br_netfilter) exist (the role's modules-load.conf.j2 lists them for
    boot, since systemd-modules-load runs before systemd-sysctl). A module that cannot be loaded fails the
    host, naming it, unless C(load_modules) is false (then it is reported, and its keys are skipped).
  - Check mode reports what would be set and writes nothing; C(--diff) shows the runtime values.
options:
  settings: {type: dict, required: true, description: "sysctl key -> wanted value, in file order"}
  floor_keys: {type: list, elements: str, default: [], description: Integer keys only ever raised.}
  container:
    type: bool
    description: The node is a container; absent, detected here as setup's virtual facts would.
  host: {type: str, default: "", description: Inventory name shown in the report of skipped keys.}
  modules: {type: list, elements: str, default: [], description: Kernel modules loaded now and at boot.}
  load_modules: {type: bool, default: true, description: modprobe the modules of C(modules) not loaded yet.}
"""

RETURN = r"""
settings:
  description: One entry per key with key, wanted, value (to persist), before, status
    (set, ok, skipped), reason and line (plain, optional, commented) for the sysctl.d template.
  type: list
  returned: always
skipped_keys: {description: '"key: reason" for every skipped key.', type: list, returned: always}
runtime_changed:
  description: A key was (or in check mode would be) set at runtime.
  type: bool
  returned: always
modules_loaded:
  description: Modules loaded (in check mode, to be loaded) by this run.
  type: list
  returned: always
modules_missing:
  description: Modules not loaded because load_modules is false.
  type: list
  returned: always
"""

PROC_SYS = "/proc/sys"
SYS_MODULE = "/sys/module"


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


def missing_modules(names: list[str], root: str = SYS_MODULE) -> list[str]:
    """Modules the kernel does not list under /sys/module (loaded or built in ones are listed)."""
    return [name for name in names if not os.path.isdir(os.path.join(root, name.replace("-", "_")))]


def load_modules(module: AnsibleModule, names: list[str], host: str) -> None:
    """modprobe each module; a failure fails the host, naming the module and the way out."""
    modprobe = module.get_bin_path("modprobe") or "modprobe"
    for name in names:
        rc, _out, err = module.run_command([modprobe, name], check_rc=False)
        if rc != 0:
            where = f" on {host}" if host else ""
            module.fail_json(
                msg=f"kernel module {name} is not loaded{where} and `modprobe {name}` failed: "
                f"{err.strip() or f'exit {rc}'} -> fix: install the kernel's modules package or load {name} "
                "on the machine (a container's host), or set node_tuning_load_modules: false where the host "
                "loads it itself"
            )


def is_container(module: AnsibleModule) -> bool:
    """The same answer as `'container' in ansible_facts.virtualization_tech_guest` from setup."""
    facts = LinuxVirtualCollector().collect(module=module)
    return "container" in (facts.get("virtualization_tech_guest") or [])


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "settings": {"type": "dict", "required": True},
            "floor_keys": {"type": "list", "elements": "str", "default": []},
            "container": {"type": "bool"},
            "host": {"type": "str", "default": ""},
            "modules": {"type": "list", "elements": "str", "default": []},
            "load_modules": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    floors = set(module.params["floor_keys"])
    container = module.params["container"]
    if container is None:
        container = is_container(module)
    p = module.params
    missing = missing_modules(p["modules"])
    loaded = missing if p["load_modules"] else []
    if loaded and not module.check_mode:
        load_modules(module, loaded, p["host"])
    results = []
    for key, wanted in module.params["settings"].items():
        entry = plan_key(key, wanted, key in floors, container)
        if entry["status"] == "set" and not module.check_mode:
            try:
                entry = write_key(entry)
            except ValueError as exc:
                fix = "correct it in node_tuning_sysctl or node_tuning_sysctl_extra"
                module.fail_json(msg=f"{exc} -> fix: {fix}", settings=results)
        results.append(entry)
    skipped = [f"{e['key']}: {e['reason']}" for e in results if e["status"] == "skipped"]
    changed_entries = [e for e in results if e["status"] == "set"]
    diffs = [{
        "before_header": "runtime (/proc/sys)",
        "after_header": "runtime (/proc/sys)",
        "before": "".join(f"{e['key']} = {e['before']}\n" for e in changed_entries),
        "after": "".join(f"{e['key']} = {e['value']}\n" for e in changed_entries),
    }]
    if missing and not p["load_modules"]:
        skipped += [f"module {name}: not loaded, and node_tuning_load_modules is false" for name in missing]
    if skipped:
        where = f" on {module.params['host']}" if module.params["host"] else ""
        module.warn(f"node_tuning skipped {len(skipped)} key(s){where}:\n- " + "\n- ".join(skipped))
    module.exit_json(
        changed=bool(changed_entries) or bool(loaded),
        runtime_changed=bool(changed_entries),
        settings=results,
        skipped_keys=skipped,
        modules_loaded=loaded,
        modules_missing=[] if p["load_modules"] else missing,
        diff=diffs,
    )


if __name__ == "__main__":
    main()
