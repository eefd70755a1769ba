#!/usr/bin/python
"""Module `ufc_node_state`: a node's at-target record, read (probe) or written (record), in one run.

deploy-nodes.yml's fast path (docs/architecture.md decision 18). After a full, successful run of the
play's roles, `mode: record` writes a JSON record on the node: the digest of every input of the run
(computed on the controller by action_plugins/ufc_node_state.py) and what the node looked like then
(sha256 of the files the roles manage, size and mtime of the binaries and kubelet.conf, whether
npu-smi and the NPU admission record exist, the packages' versions, the services active, the kernel
modules loaded and the sysctl values at runtime). The next run's `mode: probe` compares both: the
same digest and a node that still looks the same mean every role would find nothing to do, so the
play ends for that node there. Anything else (another input, a file edited by hand, a package
upgraded, a service stopped, kubelet.conf gone, no record) is the full path, and the probe removes
the record first, so a full run that fails leaves none behind.

Standard library and roles/ufc_common's module_utils only: it runs on the node's Python.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ufcctl_files import write_atomically  # roles/ufc_common (every role of the play)
from ansible.module_utils.ufcctl_systemd import unit_states

DOCUMENTATION = r"""
module: ufc_node_state
short_description: Read or write a node's at-target record (deploy-nodes' fast path)
description:
  - >-
    Called by the C(ufc_node_state) action plugin (playbooks/action_plugins/ufc_node_state.py), which
    computes I(digest) and I(parts) on the controller; a play calls the action, not this module.
  - >-
    I(mode=record) writes the record at I(path): the digest of the run's inputs and what the node
    looks like now (sha256 of I(files), size and mtime of I(stat), the versions of I(packages), the
    I(services) active, the I(modules) loaded, the runtime values of I(sysctl)).
  - >-
    I(mode=probe) compares the record with I(digest) and the node; the same digest and a node that
    still looks the same mean the node is at target. Anything else is the full path, and the probe
    removes the record first, so a full run that fails leaves none behind.
options:
  mode:
    description: Read and compare the record (probe) or write it (record).
    type: str
    choices: [probe, record]
    default: probe
  path: {type: str, required: true, description: The record on the node.}
  digest: {type: str, required: true, description: The digest of the run's inputs (the action's).}
  files: {type: list, elements: str, default: [], description: "record: paths whose sha256 is kept"}
  stat: {type: list, elements: str, default: [], description: "record: size and mtime (or absence) kept"}
  packages: {type: list, elements: str, default: [], description: "record: Debian packages, version kept"}
  services: {type: list, elements: str, default: [], description: "record: units that must be active"}
  modules: {type: list, elements: str, default: [], description: "record: kernel modules kept when loaded"}
  sysctl: {type: list, elements: str, default: [], description: "record: sysctl keys, runtime value kept"}
  require: {type: list, elements: str, default: [], description: "record: paths a record needs"}
  parts: {type: dict, default: {}, description: "record: each input's short digest by name (the action's)"}
"""

VERSION = 1


def file_sha256(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def file_stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def sysctl_value(key: str) -> str | None:
    try:
        with open("/proc/sys/" + key.replace(".", "/"), encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return None


def module_loaded(name: str) -> bool:
    return os.path.isdir("/sys/module/" + name.replace("-", "_"))


def package_versions(names: list[str], run=subprocess.run) -> dict[str, str | None]:
    """Installed version of each package (None: not installed), one dpkg-query call."""
    if not names:
        return {}
    found: dict[str, str | None] = dict.fromkeys(names)
    proc = run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status} ${Version}\n", *names],
               capture_output=True, text=True, check=False)
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "installed" and parts[0] in found:
            found[parts[0]] = parts[2]
    return found


def active_services(module, names: list[str]) -> dict[str, bool]:
    """Whether each unit is active (ActiveState "active"), one systemctl call (ufcctl_systemd)."""
    return {name: state["active"] == "active" for name, state in unit_states(module, names).items()}


def observe(spec: dict, module, run=subprocess.run) -> dict:
    """What the node looks like now, for the parts a record names (`module`: its systemctl runs)."""
    return {
        "files": {p: file_sha256(p) for p in spec.get("files", {})},
        "stat": {p: file_stat(p) for p in spec.get("stat", {})},
        "packages": package_versions(sorted(spec.get("packages", {})), run),
        "services": active_services(module, sorted(spec.get("services", []))),
        "modules": {m: module_loaded(m) for m in spec.get("modules", [])},
        "sysctl": {k: sysctl_value(k) for k in spec.get("sysctl", {})},
    }


def judge(record: dict | None, digest: str, now: dict | None) -> list[str]:
    """Why the node is not at target (empty: it is). `now` is observe(record)."""
    if record is None:
        return ["no record of a full run"]
    if record.get("version") != VERSION:
        return [f"record version {record.get('version')!r}, not {VERSION}"]
    if record.get("digest") != digest:
        return ["the run's inputs changed since the last full run (inventory, settings or ufcctl version)"]
    now = now or {}
    why: list[str] = []
    for path, want in sorted(record.get("files", {}).items()):
        if now.get("files", {}).get(path) != want:
            why.append(f"{path} changed or is missing")
    for path, want in sorted(record.get("stat", {}).items()):
        if now.get("stat", {}).get(path) != want:
            why.append(f"{path} changed or is missing")
    for name, want in sorted(record.get("packages", {}).items()):
        have = now.get("packages", {}).get(name)
        if have != want:
            why.append(f"package {name} is {have or 'not installed'}, was {want}")
    for name in sorted(record.get("services", [])):
        if not now.get("services", {}).get(name):
            why.append(f"{name} is not active")
    for name in sorted(record.get("modules", [])):
        if not now.get("modules", {}).get(name):
            why.append(f"kernel module {name} is not loaded")
    for key, want in sorted(record.get("sysctl", {}).items()):
        have = now.get("sysctl", {}).get(key)
        if have != want:
            why.append(f"sysctl {key} is {have!r}, was {want!r}")
    return why


def build_record(params: dict, module, run=subprocess.run) -> tuple[dict | None, list[str]]:
    """The record of this node now, or None and why not (a required path is missing, or a file,
    package or service the roles should have left in place is not there)."""
    missing = [p for p in params["require"] if not os.path.exists(p)]
    if missing:
        return None, [f"{p} is missing" for p in missing]
    spec = {"files": params["files"], "stat": sorted(set(params["stat"]) | set(params["require"])),
            "packages": params["packages"], "services": params["services"], "modules": params["modules"],
            "sysctl": params["sysctl"]}
    now = observe(spec, module, run)
    absent = ([p for p, v in now["files"].items() if v is None]
              + [f"package {p}" for p, v in now["packages"].items() if v is None]
              + [f"{s} (not active)" for s, v in now["services"].items() if not v])
    if absent:
        return None, [f"{a} missing" for a in absent]
    record = {
        "version": VERSION,
        "digest": params["digest"],
        "files": now["files"],
        "stat": now["stat"],
        "packages": now["packages"],
        "services": sorted(params["services"]),
        "modules": [m for m, loaded in now["modules"].items() if loaded],
        "sysctl": {k: v for k, v in now["sysctl"].items() if v is not None},
        # each input's short digest, so a later probe that misses can name what changed
        "parts": dict(params.get("parts") or {}),
    }
    return record, []


def read_record(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_record(path: str, record: dict) -> None:
    os.makedirs(os.path.dirname(path) or ".", mode=0o755, exist_ok=True)
    write_atomically(path, (json.dumps(record, sort_keys=True, indent=1) + "\n").encode(), 0o644)


def main() -> None:
    listed = {"type": "list", "elements": "str", "default": []}
    module = AnsibleModule(
        argument_spec={
            "mode": {"type": "str", "choices": ["probe", "record"], "default": "probe"},
            "path": {"type": "str", "required": True},
            "digest": {"type": "str", "required": True},
            "files": listed, "stat": listed, "packages": listed, "services": listed, "modules": listed,
            "sysctl": listed, "require": listed, "parts": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    p = module.params
    path = p["path"]
    if p["mode"] == "probe":
        record = read_record(path)
        same_inputs = bool(record) and record.get("digest") == p["digest"]
        why = judge(record, p["digest"], observe(record, module) if same_inputs else None)
        removed = False
        if why and os.path.lexists(path) and not module.check_mode:
            os.unlink(path)  # a full run that fails from here on leaves no record claiming the node
            removed = True
        # the record's per-input digests when the inputs differ: the action names what changed
        recorded_parts = record.get("parts") if record and record.get("digest") != p["digest"] else None
        module.exit_json(changed=False, at_target=not why, why=why, record_removed=removed,
                         **({"recorded_parts": recorded_parts} if isinstance(recorded_parts, dict) else {}))
    record, why = build_record(p, module)
    if record is None:
        if os.path.lexists(path) and not module.check_mode:
            os.unlink(path)
        module.exit_json(changed=False, recorded=False, why=why)
    if not module.check_mode:
        write_record(path, record)
    module.exit_json(changed=False, recorded=not module.check_mode, why=[])


if __name__ == "__main__":
    main()
