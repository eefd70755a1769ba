#!/usr/bin/python
"""Node side of the `ufc_files` action: write several files and directories in one module run."""

from __future__ import annotations

import base64
import grp
import os
import pwd
import shlex
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ufcctl_files import fsync_directory, set_attributes, stage_beside

DOCUMENTATION = r"""
module: ufc_files
short_description: Write several rendered files and directories on a node in one call
description:
  - Called by the C(ufc_files) action plugin (roles/ufc_common/action_plugins/ufc_files.py), which
    renders the templates on the controller and sends their bytes here; a role calls the action,
    not this module. See roles/ufc_common/README.md for the task-level options (template, src,
    vars, secret).
  - Directories first (missing parents are created 0755), then files. Every file whose content
    changes is written to a temporary file beside it, given its owner, group and mode, checked by
    its I(validate) command, and only when every file of the call passed is each one renamed over
    its destination (atomic per file). A failed check replaces nothing.
  - Check mode reports what would change and writes nothing (I(validate) is not run).
options:
  directories:
    description:
      - Directories to create or fix, in order. Each is a mapping with these keys (the module reads them
        itself; the argument_spec checks only that each entry is a mapping).
      - C(path) (path, required) - Directory.
      - C(mode) (raw, required) - Octal mode string such as C("0750").
      - >-
        C(owner) (str) - User name or id; unset keeps an existing directory's owner (new: root).
      - C(group) (str) - Group name; unset as for C(owner).
    type: list
    elements: dict
    default: []
  files:
    description:
      - Files to write, in order. Each is a mapping with these keys (the module reads them itself; the
        argument_spec checks only that each entry is a mapping).
      - C(dest) (path, required) - Destination (its directory exists or is listed).
      - C(content) (str, required) - The file's bytes, base64-encoded.
      - C(mode) (raw, required) - Octal mode string such as C("0640").
      - >-
        C(owner) (str) - User name or id; unset keeps an existing file's owner (new: root).
      - C(group) (str) - Group name; unset as for C(owner).
      - >-
        C(validate) (str) - Command run on the temporary file (C(%s)) before it replaces C(dest);
        non-zero: refused.
      - C(secret) (bool, default false) - Never return its content or its check's output.
    type: list
    elements: dict
    default: []
"""

RETURN = r"""
files:
  description: Per file, in order - dest, changed, created, content (content differs), attributes
    (owner/group/mode differ), and for a changed non-secret text file in diff mode its former text (before).
  type: list
  returned: always
directories:
  description: Per directory - path, changed, created, attributes.
  type: list
  returned: always
changed_paths:
  description: Every directory and file that changed (or would change in check mode).
  type: list
  returned: always
"""

# Diffs of larger files are not worth their transfer; the diff then says "not shown".
DIFF_MAX_BYTES = 256 * 1024


class Refused(Exception):
    """A file or directory that cannot be written as asked (the message names it)."""


def parse_mode(value, where):
    """An octal string ("0640") or an int (taken as is, as the file module does)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    try:
        mode = int(text, 8)
    except ValueError:
        raise Refused(f"{where}: mode {value!r} is not an octal number such as \"0640\"") from None
    if mode > 0o7777:
        raise Refused(f"{where}: mode {value!r} is out of range")
    return mode


def resolve_ids(owner, group, where, check_mode):
    """(uid, gid), None for unset; a number naming no user or group is the id itself. An unknown
    name fails, except in check mode, where an earlier
    task of the same run (a package install) may create it: then -1, read as "would change"."""
    ids = []
    for name, lookup, kind in ((owner, pwd.getpwnam, "user"), (group, grp.getgrnam, "group")):
        if name in (None, ""):
            ids.append(None)
            continue
        try:
            ids.append(lookup(str(name))[2])
        except KeyError:
            # a number that names no user/group is taken as the id, as ansible.builtin.file does
            # (e.g. the NFS dataset owner 1000, which need not exist on the NFS server)
            if str(name).isdigit():
                ids.append(int(name))
                continue
            if check_mode:
                ids.append(-1)
                continue
            raise Refused(f"{where}: {kind} {name} does not exist on this host") from None
    return ids[0], ids[1]


def attributes_differ(st, uid, gid, mode):
    return (
        (uid is not None and st.st_uid != uid)
        or (gid is not None and st.st_gid != gid)
        or stat.S_IMODE(st.st_mode) != mode
    )


def ensure_directory(entry, check_mode):
    path = entry["path"]
    mode = parse_mode(entry["mode"], path)
    uid, gid = resolve_ids(entry.get("owner"), entry.get("group"), path, check_mode)
    result = {"path": path, "created": False, "attributes": False}
    if os.path.lexists(path) and not os.path.isdir(path):
        raise Refused(f"{path}: exists and is not a directory")
    if not os.path.isdir(path):
        result["created"] = True
        if not check_mode:
            parent = os.path.dirname(path.rstrip("/"))
            if parent:
                os.makedirs(parent, mode=0o755, exist_ok=True)
            os.mkdir(path, mode & 0o777)
            set_attributes(path, uid, gid, mode)
    elif attributes_differ(os.stat(path), uid, gid, mode):
        result["attributes"] = True
        if not check_mode:
            set_attributes(path, uid, gid, mode)
    result["changed"] = result["created"] or result["attributes"]
    return result


def plan_file(entry, check_mode, want_diff, new_directories):
    """What writing `entry` would change, without touching anything."""
    dest = entry["dest"]
    parent = os.path.dirname(dest) or "."
    if not os.path.isdir(parent) and parent not in new_directories:
        raise Refused(f"{dest}: directory {parent} does not exist (list it under directories)")
    data = base64.b64decode(entry["content"])
    mode = parse_mode(entry["mode"], dest)
    uid, gid = resolve_ids(entry.get("owner"), entry.get("group"), dest, check_mode)
    plan = {"dest": dest, "data": data, "mode": mode, "uid": uid, "gid": gid,
            "validate": entry.get("validate"), "secret": bool(entry.get("secret"))}
    result = {"dest": dest, "created": False, "content": False, "attributes": False}
    if os.path.isdir(dest):
        raise Refused(f"{dest}: is a directory")
    if not os.path.lexists(dest):
        result["created"] = result["content"] = True
    elif os.path.islink(dest):
        result["content"] = True  # replaced by a file, as the copy module does without follow
    else:
        with open(dest, "rb") as handle:
            current = handle.read()
        result["content"] = current != data
        result["attributes"] = attributes_differ(os.stat(dest), uid, gid, mode)
        if want_diff and result["content"] and not plan["secret"] and len(current) <= DIFF_MAX_BYTES:
            try:
                result["before"] = current.decode("utf-8")
            except UnicodeDecodeError:
                pass
    result["changed"] = result["content"] or result["attributes"]
    plan["result"] = result
    return plan


def stage(plan):
    """Write the new content to a temporary file beside dest, with its final attributes."""
    plan["tmp"] = stage_beside(plan["dest"], plan["data"], plan["mode"], plan["uid"], plan["gid"])


def validate(module, plan):
    """None when the staged file passes its check, else the failure (output hidden for secrets)."""
    command = plan["validate"]
    if not command:
        return None
    if "%s" not in command:
        raise Refused(f"{plan['dest']}: validate must contain %s (the file to check): {command}")
    rc, out, err = module.run_command(command.replace("%s", shlex.quote(plan["tmp"])))
    if rc == 0:
        return None
    failure = {"dest": plan["dest"], "rc": rc, "command": command}
    if plan["secret"]:
        failure["output"] = "(hidden: secret file)"
    else:
        failure["output"] = (out + err).strip()
    return failure


def discard(plans):
    for plan in plans:
        tmp = plan.pop("tmp", None)
        if tmp and os.path.lexists(tmp):
            os.unlink(tmp)


def write_files(module, plans):
    """Stage and validate every changed content, then rename them all; attributes in place."""
    staged = [p for p in plans if p["result"]["content"]]
    try:
        for plan in staged:
            stage(plan)
        failures = [f for f in (validate(module, p) for p in staged) if f]
    except BaseException:
        discard(staged)
        raise
    if failures:
        discard(staged)
        return failures
    for plan in staged:
        os.replace(plan.pop("tmp"), plan["dest"])
    for parent in sorted({os.path.dirname(p["dest"]) or "." for p in staged}):
        fsync_directory(parent)  # once per directory, after every rename
    for plan in plans:
        if plan["result"]["attributes"] and not plan["result"]["content"]:
            set_attributes(plan["dest"], plan["uid"], plan["gid"], plan["mode"])
    return []


def main():
    module = AnsibleModule(
        argument_spec={
            "directories": {"type": "list", "elements": "dict", "default": []},
            "files": {"type": "list", "elements": "dict", "default": []},
        },
        supports_check_mode=True,
    )
    files = module.params["files"]
    for entry in files:
        if entry.get("secret"):  # masked wherever it could surface in this module's output
            module.no_log_values.add(entry.get("content", ""))
            try:
                module.no_log_values.add(base64.b64decode(entry.get("content", "")).decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                pass
    invocation = {"module_args": {
        "directories": [d.get("path") for d in module.params["directories"]],
        "files": [f.get("dest") for f in files],
    }}
    try:
        directories = [ensure_directory(d, module.check_mode) for d in module.params["directories"]]
        created = {d["path"].rstrip("/") for d in directories if d["created"]}
        plans = [plan_file(f, module.check_mode, module._diff, created) for f in files]
        failures = [] if module.check_mode else write_files(module, plans)
    except Refused as err:
        module.fail_json(msg=str(err), invocation=invocation)
    except OSError as err:
        module.fail_json(msg=f"{err.filename or 'ufc_files'}: {err.strerror}", invocation=invocation)
    results = [p["result"] for p in plans]
    changed_paths = [d["path"] for d in directories if d["changed"]]
    changed_paths += [r["dest"] for r in results if r["changed"]]
    if failures:
        module.fail_json(
            msg="; ".join(f"{f['dest']}: validate failed (rc {f['rc']}): {f['output']}" for f in failures)
            + " - no file of this call was replaced",
            failures=failures, directories=directories, invocation=invocation,
        )
    module.exit_json(
        changed=bool(changed_paths), files=results, directories=directories,
        changed_paths=changed_paths, invocation=invocation,
    )


if __name__ == "__main__":
    main()
