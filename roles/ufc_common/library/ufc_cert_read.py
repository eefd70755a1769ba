#!/usr/bin/python
"""Node side of `ufcctl certs check`: the first certificate of each listed file, never a key."""

from __future__ import annotations

import os
import stat

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: ufc_cert_read
short_description: Read the first PEM certificate of several files in one call
description:
  - For each path, the first C(-----BEGIN CERTIFICATE-----) block of the file, or that the file is
    absent, or why it could not be read. Nothing else of a file leaves the node, so a file that
    also holds a private key (the kubelet's C(kubelet-client-current.pem)) is safe to list.
  - Reads only; check mode reads too. Used by playbooks/certs-check.yml (C(ufcctl certs check)).
options:
  paths:
    description: Certificate files to read (symbolic links are followed).
    type: list
    elements: path
    required: true
"""

BEGIN, END = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
# a certificate file is a few KiB; a CA bundle some hundred: more is not a certificate we issue
MAX_BYTES = 1 << 20


def read_one(path: str) -> dict:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return {"path": path, "pem": None, "error": ""}
    except OSError as err:
        return {"path": path, "pem": None, "error": f"cannot stat: {err.strerror}"}
    if not stat.S_ISREG(info.st_mode):
        return {"path": path, "pem": None, "error": "not a regular file"}
    if info.st_size > MAX_BYTES:
        return {"path": path, "pem": None, "error": f"{info.st_size} bytes: larger than {MAX_BYTES}"}
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            text = fh.read(MAX_BYTES)
    except OSError as err:
        return {"path": path, "pem": None, "error": f"cannot read: {err.strerror}"}
    start = text.find(BEGIN)
    end = text.find(END, start) if start >= 0 else -1
    if end < 0:
        return {"path": path, "pem": None, "error": "no PEM certificate in the file"}
    return {"path": path, "pem": text[start:end + len(END)] + "\n", "error": ""}


def main() -> None:
    module = AnsibleModule(argument_spec={"paths": {"type": "list", "elements": "path", "required": True}},
                           supports_check_mode=True)
    module.exit_json(changed=False, ufc_certs=[read_one(p) for p in module.params["paths"]])


if __name__ == "__main__":
    main()
