#!/usr/bin/python
"""Node side of `ufcctl certs check`: the first certificate of each listed file, never a key."""

from __future__ import annotations

import base64
import binascii
import os
import re
import stat

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: ufc_cert_read
short_description: Read the first PEM certificate of several files in one call
description:
  - >-
    For each path, the first C(-----BEGIN CERTIFICATE-----) block of the file (of a kubeconfig such
    as kubeadm's C(admin.conf): the one in its first C(client-certificate-data)), or that the file is
    absent, or why it could not be read. Nothing else of a file leaves the node, so a file that
    also holds a private key (the kubelet's C(kubelet-client-current.pem), C(admin.conf)) is safe to
    list.
  - Reads only; check mode reads too. Used by playbooks/certs-check.yml (C(ufcctl certs check)).
options:
  paths:
    description: Certificate files to read (symbolic links are followed).
    type: list
    elements: path
    required: true
"""

BEGIN, END = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
# a kubeconfig's embedded client certificate (base64 of PEM), one line as kubeadm and kubectl write it
EMBEDDED = re.compile(r"^\s*client-certificate-data:\s*['\"]?([A-Za-z0-9+/=]+)", re.M)
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
    pem = first_block(text)
    if pem is None and (embedded := EMBEDDED.search(text)):
        try:
            pem = first_block(base64.b64decode(embedded.group(1), validate=True).decode("ascii", "replace"))
        except (binascii.Error, ValueError):
            pem = None
    if pem is None:
        return {"path": path, "pem": None, "error": "no PEM certificate in the file"}
    return {"path": path, "pem": pem, "error": ""}


def first_block(text: str) -> str | None:
    start = text.find(BEGIN)
    end = text.find(END, start) if start >= 0 else -1
    return None if end < 0 else text[start:end + len(END)] + "\n"


def main() -> None:
    module = AnsibleModule(argument_spec={"paths": {"type": "list", "elements": "path", "required": True}},
                           supports_check_mode=True)
    module.exit_json(changed=False, ufc_certs=[read_one(p) for p in module.params["paths"]])


if __name__ == "__main__":
    main()
