#!/usr/bin/python
"""Read-only probe of one etcd host for roles/etcd: package, data, units, health, keys and certificates."""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import ssl
import stat
import urllib.request

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ufcctl_packages import DPKG_STATUS, dpkg_status, is_installed
from ansible.module_utils.ufcctl_packages import package_version as installed_else_candidate
from ansible.module_utils.ufcctl_systemd import unit_states

DOCUMENTATION = r"""
module: etcd_probe
short_description: Everything roles/etcd needs to know about a host, in one module run, changing nothing
description:
  - Replaces a stat per data directory, a slurp per certificate, a key and CSR run per certificate
    and a systemd and HTTPS round trip per cluster on converged hosts; the role decides on the
    controller (ufcctl/domain/etcd/pki.py, filters) which of those steps still need to run.
  - Private keys are read to return their public half, type, curve and file attributes, never their
    content.
options:
  package: {type: str, default: "", description: Debian package whose installed state is reported.}
  mask: {type: path, default: "", description: Unit file reported as masked when it links to /dev/null.}
  data_dirs: {type: dict, default: {}, description: "cluster -> data directory: does member/snap/db exist."}
  units: {type: list, elements: str, default: [], description: systemd units whose state is reported.}
  health:
    type: list
    elements: dict
    default: []
    description: "{cluster, url, ca, cert, key}: GET url (etcd's /health) with that client certificate."
  certs:
    type: list
    elements: dict
    default: []
    description: "{name, cert, key}: paths of a certificate and its key."
  tools: {type: list, elements: str, default: [], description: Commands whose presence on PATH is reported.}
"""

RETURN = r"""
package_installed: {description: The package is installed (dpkg status), type: bool, returned: always}
package_version:
  description: The package's version, installed (dpkg status) or else apt's candidate; "" when neither.
  type: str
  returned: always
masked: {description: The mask path links to /dev/null, type: bool, returned: always}
data: {description: cluster -> the data directory holds a member database, type: dict, returned: always}
units: {description: "unit -> {active: ActiveState, enabled: UnitFileState}", type: dict, returned: always}
health: {description: cluster -> etcd answered healthy, type: dict, returned: always}
certs:
  description: "name -> {cert: PEM text or null, key: {exists, mode, owner, group, type, curve, public_key}}"
  type: dict
  returned: always
tools: {description: command -> found on PATH, type: dict, returned: always}
"""

HEALTH_TIMEOUT = 3


def package_installed(name):
    """Whether dpkg lists `name` as installed (the state apt's `present` ensures)."""
    return is_installed(dpkg_status([name], DPKG_STATUS).get(name, {}))


def package_version(module, name):
    """What roles/etcd's kubeadm version check compares: the installed version, else apt's candidate."""
    return installed_else_candidate(module, name, DPKG_STATUS)


def healthy(check):
    """etcd's /health over TLS with the given client certificate: {"health": "true"} means healthy."""
    try:
        context = ssl.create_default_context(cafile=check["ca"])
        context.load_cert_chain(check["cert"], check["key"])
        with urllib.request.urlopen(check["url"], context=context, timeout=HEALTH_TIMEOUT) as response:
            return json.loads(response.read().decode() or "{}").get("health") == "true"
    except (OSError, ValueError, ssl.SSLError):
        return False


def _name(lookup, ident):
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def key_info(path):
    """Attributes and public half of a private key; its content never leaves this function."""
    try:
        st = os.stat(path)
    except OSError:
        return {"exists": False}
    info = {
        "exists": True,
        "mode": f"{stat.S_IMODE(st.st_mode):04o}",
        "owner": _name(pwd.getpwuid, st.st_uid),
        "group": _name(grp.getgrgid, st.st_gid),
        "type": None,
        "curve": None,
        "public_key": None,
    }
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec
    except ImportError:
        info["error"] = "python3-cryptography is not installed"
        return info
    try:
        with open(path, "rb") as handle:
            key = serialization.load_pem_private_key(handle.read(), password=None)
    except (OSError, ValueError, TypeError) as err:
        info["error"] = f"unreadable key: {type(err).__name__}"
        return info
    if isinstance(key, ec.EllipticCurvePrivateKey):
        info["type"], info["curve"] = "EC", key.curve.name
    else:
        info["type"] = type(key).__name__
    info["public_key"] = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    return info


def cert_text(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def main():
    module = AnsibleModule(
        argument_spec={
            "package": {"type": "str", "default": ""},
            "mask": {"type": "path", "default": ""},
            "data_dirs": {"type": "dict", "default": {}},
            "units": {"type": "list", "elements": "str", "default": []},
            "health": {"type": "list", "elements": "dict", "default": []},
            "certs": {"type": "list", "elements": "dict", "default": []},
            "tools": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    p = module.params
    mask = p["mask"]
    module.exit_json(
        changed=False,
        package_installed=package_installed(p["package"]),
        package_version=package_version(module, p["package"]),
        masked=bool(mask) and os.path.islink(mask) and os.readlink(mask) == "/dev/null",
        data={c: os.path.exists(os.path.join(d, "member", "snap", "db")) for c, d in p["data_dirs"].items()},
        units=unit_states(module, p["units"]),
        health={h["cluster"]: healthy(h) for h in p["health"]},
        certs={c["name"]: {"cert": cert_text(c["cert"]), "key": key_info(c["key"])} for c in p["certs"]},
        tools={t: shutil.which(t) is not None for t in p["tools"]},
    )


if __name__ == "__main__":
    main()
