"""Which address a control-plane or load-balancer host is reached at, from the values Ansible knows."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from ufcctl.domain.inventory.values import literal


class AddressError(ValueError):
    """A host has no usable IP address; the message names the host and the variable to set."""


def is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def host_address(host: str, values: Mapping[str, Any], explicit_var: str) -> str:
    """`explicit_var`, else `ansible_host` when it is an IP, else the gathered `fact_address`.

    VRRP unicast peers, haproxy servers and kubeadm's advertiseAddress need IPs, not names: a name
    resolving differently on two hosts would split the VIP or the backend list silently.
    """
    for key in (explicit_var, "ansible_host", "fact_address"):
        value = literal(values.get(key))
        if value and is_ip(value):
            return str(value)
        if value and key == explicit_var:
            raise AddressError(f"host {host}: {explicit_var}={value!r} is not an IP address")
    raise AddressError(
        f"host {host}: no IP address known; set {explicit_var} (or ansible_host to an IP) in the inventory"
    )
