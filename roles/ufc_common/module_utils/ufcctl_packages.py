"""Package queries of the roles' node-side probes: dpkg's status file, apt's candidate, rpm; a package's
sha256 in a sha256sum-format file.

Node-side (ansible.module_utils.ufcctl_packages): standard library only, the node's python3.
Reads only: installing is apt's (ansible.builtin.apt) or the role's own module's business.
"""

from __future__ import annotations

import os
import re

DPKG_STATUS = "/var/lib/dpkg/status"


def dpkg_status(names, status=DPKG_STATUS):
    """name -> dpkg's status fields, for each of `names` that dpkg lists (one read of its status file)."""
    wanted = set(n for n in names if n)
    if not wanted:
        return {}
    try:
        with open(status, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return {}
    found = {}
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if ": " in line and not line[0].isspace()]
        fields = dict(line.split(": ", 1) for line in lines)
        if fields.get("Package") in wanted:
            found[fields["Package"]] = fields
    return found


def is_installed(fields):
    """Whether dpkg's fields of a package say installed (the state apt's `present` ensures)."""
    return fields.get("Status", "").endswith(" installed")


def apt_candidate(text):
    """The Candidate line of `apt-cache policy` ("" for none)."""
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "Candidate" and value.strip() != "(none)":
            return value.strip()
    return ""


def package_version(module, name, status=DPKG_STATUS):
    """The installed version of `name`, else what apt would install (`apt-cache policy` reads apt's
    lists, read-only); "" for neither."""
    if not name:
        return ""
    fields = dpkg_status([name], status).get(name, {})
    if is_installed(fields):
        return fields.get("Version", "")
    apt_cache = module.get_bin_path("apt-cache")
    if not apt_cache:
        return ""
    rc, out, _err = module.run_command([apt_cache, "policy", name])
    return apt_candidate(out) if rc == 0 else ""


def missing_packages(module, names, status=DPKG_STATUS):
    """The names not installed: from dpkg's status file, else `rpm -q` each; None when neither exists."""
    if os.path.exists(status):
        installed = dpkg_status(names, status)
        return [n for n in names if not is_installed(installed.get(n, {}))]
    rpm = module.get_bin_path("rpm")
    if rpm:
        return [n for n in names if module.run_command([rpm, "-q", n])[0] != 0]
    return None


def checksum_from_file(text, package):
    """The sha256 of `package` in a sha256sum-format file (text or binary mode, optional ./), or ''."""
    for line in text.splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) != 2 or not re.fullmatch(r"[0-9a-fA-F]{64}", parts[0]):
            continue
        name = parts[1].strip().lstrip("*")
        if name.startswith("./"):
            name = name[2:]
        if name == package:
            return parts[0].lower()
    return ""
