#!/usr/bin/python
"""What kube_control_plane needs to know about a host, in one module run: its address and kubeadm's tools."""

from __future__ import annotations

import os
import re

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: kube_control_plane_probe
short_description: Read a host's default IPv4 address and whether kubeadm, kubelet and the CRI exist
description:
  - Replaces a fact-gathering run (default IPv4 address) and a stat per required path with one
    module run that changes nothing (check mode runs it too).
  - The address is the source address of the IPv4 route to 8.8.8.8, as Ansible's C(default_ipv4)
    fact finds it; no packet is sent.
options:
  paths:
    description: What a bootstrap needs, name -> path (C(unix://) is stripped from socket paths).
    type: dict
    default: {}
  joined_mark:
    description: A file kubeadm writes when this host has joined (or was initialised), e.g. kubelet.conf.
    type: str
"""

RETURN = r"""
address:
  {description: Default IPv4 source address ('' without an IPv4 default route)., type: str, returned: always}
interface: {description: Interface of that route., type: str, returned: always}
missing: {description: Names of I(paths) that do not exist, in the order given., type: list, returned: always}
joined: {description: Whether I(joined_mark) exists (true without one)., type: bool, returned: always}
"""

ROUTE = re.compile(r"\bdev\s+(?P<dev>\S+).*?\bsrc\s+(?P<src>\S+)")


def default_ipv4(module: AnsibleModule) -> tuple[str, str]:
    ip = module.get_bin_path("ip")
    if not ip:
        return "", ""
    rc, out, _ = module.run_command([ip, "-4", "route", "get", "8.8.8.8"])
    match = ROUTE.search(out) if rc == 0 else None
    return (match.group("src"), match.group("dev")) if match else ("", "")


def main() -> None:
    module = AnsibleModule(argument_spec={"paths": {"type": "dict", "default": {}},
                                          "joined_mark": {"type": "str"}}, supports_check_mode=True)
    address, interface = default_ipv4(module)
    missing = [
        name for name, path in module.params["paths"].items()
        if not os.path.exists(re.sub(r"^unix://", "", str(path)))
    ]
    mark = module.params["joined_mark"]
    module.exit_json(changed=False, address=address, interface=interface, missing=missing,
                     joined=not mark or os.path.exists(mark))


if __name__ == "__main__":
    main()
