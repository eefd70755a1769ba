"""The NPU fabric's address plan: each chip's RoCE device IP and the switch port it is cabled to.

A training job's collective traffic (HCCL) runs over each chip's own RoCE port. Every chip needs a
device IP that is unique in its fabric (the Device Plugin reports it to the scheduler as
`device_ip`; HCCL's rank table carries it), and its cable must reach the ToR switch the inventory
declares, because the placement validator and Volcano's topology-aware scheduling trust
`npu_tor_id`.

The rule (inventories/sample/README.md, "NPU fabric"), per host and from its own vars only, so a
host's addresses never move when other hosts are added or removed:

- `npu_fabric_subnet` (usually a var of the ToR's group): the IPv4 subnet of the ToR's chips.
- `npu_slice_id` (the server's position under its ToR, 0, 1, ...): its slot in that subnet.
- chip `i` of a server with `C` chips gets `network + 2 + slot * C + i`; `network + 1` is the
  gateway (`npu_fabric_gateway` overrides it). A /24 holds 31 servers of 8 chips, a /23 63.
- the expected LLDP neighbour of chip `i` is switch `npu_tor_id`, port
  `npu_fabric_port_format` formatted with `port = slot * C + i + 1`, `slot` and `chip`
  (default `"{port}"`; e.g. `"200GE1/0/{port}"`).
- `npu_device_ips` (a list, one address per chip in chip order) replaces the rule's addresses for
  a host whose cabling does not follow it; netmask and gateway still come from the subnet.

Pure: host vars in, `ChipPlan`s out; `FabricPlanError` names the host, the chip and what to fix.
"""

from __future__ import annotations

import ipaddress
import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from ufcctl.domain.placement.profiles import chips_by_type
from ufcctl.errors import shown

SUBNET_VAR = "npu_fabric_subnet"
GATEWAY_VAR = "npu_fabric_gateway"
PORT_FORMAT_VAR = "npu_fabric_port_format"
DEVICE_IPS_VAR = "npu_device_ips"
SLOT_VAR = "npu_slice_id"
TOR_VAR = "npu_tor_id"
DEFAULT_PORT_FORMAT = "{port}"
FIRST_CHIP_OFFSET = 2  # network + 1 is the gateway
PLAN_VARS = (SUBNET_VAR, DEVICE_IPS_VAR)  # either one means the host has a fabric plan


class FabricPlanError(ValueError):
    """A host's fabric vars do not give a plan: `var` is the var to fix (for the problem's file)."""

    def __init__(self, host: str, message: str, var: str):
        super().__init__(f"host {host}: {message}")
        self.host = host
        self.message = message
        self.var = var


@dataclass(frozen=True, slots=True)
class ChipPlan:
    chip: int  # physical device id (hccn_tool -i)
    address: str
    netmask: str
    gateway: str
    switch: str  # the expected LLDP neighbour: the host's npu_tor_id
    port: str  # the expected neighbour port (hccn_tool -lldp -g: Ifname)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def has_plan(hostvars: Mapping[str, Any]) -> bool:
    return any(hostvars.get(v) not in (None, "", []) for v in PLAN_VARS)


@lru_cache(maxsize=4096)  # one parse per subnet string: a 16,000-node inventory has ~2,000 ToR subnets
def _subnet(text: str) -> ipaddress.IPv4Network:
    net = ipaddress.ip_network(text, strict=True)
    if not isinstance(net, ipaddress.IPv4Network):
        raise ValueError("an IPv6 subnet (ufcctl plans IPv4 device IPs only: hccn_tool -ip -s address)")
    return net


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 9:
        return int(value.strip())
    return None


def chips_of(hostvars: Mapping[str, Any]) -> int:
    """Chips per node of the host's accelerator type (0: unknown type)."""
    return chips_by_type().get(str(hostvars.get("npu_accelerator_type") or ""), 0)


def host_plan(host: str, hostvars: Mapping[str, Any]) -> list[ChipPlan]:
    """The host's chips in chip order; [] when it has no fabric plan. Raises FabricPlanError."""
    if not has_plan(hostvars):
        return []
    chips = chips_of(hostvars)
    if chips == 0:
        raise FabricPlanError(host, "has a fabric plan but no known npu_accelerator_type (its chip count)",
                              "npu_accelerator_type")
    subnet_text = hostvars.get(SUBNET_VAR)
    if subnet_text in (None, ""):
        raise FabricPlanError(host, f"{DEVICE_IPS_VAR} is set but {SUBNET_VAR} is not: set the ToR's subnet "
                              "(netmask and gateway come from it)", SUBNET_VAR)
    try:
        net = _subnet(str(subnet_text))
    except ValueError as exc:
        raise FabricPlanError(host, f"{SUBNET_VAR} {shown(subnet_text)} is not an IPv4 subnet ({exc})",
                              SUBNET_VAR) from None
    first, last = int(net.network_address) + 1, int(net.broadcast_address) - 1  # usable addresses
    if last - first < 1:
        raise FabricPlanError(host, f"{SUBNET_VAR} {net} has no room for a gateway and chips", SUBNET_VAR)
    gateway = _gateway(host, hostvars, net, first)
    switch = hostvars.get(TOR_VAR)
    if switch in (None, ""):
        raise FabricPlanError(host, f"has a fabric plan but no {TOR_VAR} (the switch its chips are cabled "
                              "to)", TOR_VAR)
    slot = _whole(hostvars.get(SLOT_VAR))
    explicit = hostvars.get(DEVICE_IPS_VAR)
    if explicit in (None, "", []):
        if slot is None:
            raise FabricPlanError(host, f"{SLOT_VAR} {shown(hostvars.get(SLOT_VAR))} is not a whole number "
                                  ">= 0 (the server's slot under its ToR gives its device IPs)", SLOT_VAR)
        base = int(net.network_address) + FIRST_CHIP_OFFSET + slot * chips
        if base + chips - 1 > last:
            room = (last - int(net.network_address) - FIRST_CHIP_OFFSET + 1) // chips
            raise FabricPlanError(
                host, f"chip {chips - 1} at {SLOT_VAR} {slot} would need "
                f"{ipaddress.IPv4Address(base + chips - 1)}, past {net}'s last usable address "
                f"{ipaddress.IPv4Address(last)} ({net} holds slots 0-{room - 1} of {chips} chips): "
                "use a larger subnet", SUBNET_VAR)
        addresses = [str(ipaddress.IPv4Address(base + i)) for i in range(chips)]
    else:
        addresses = _explicit(host, explicit, chips, net)
    port_format = str(hostvars.get(PORT_FORMAT_VAR) or DEFAULT_PORT_FORMAT)
    why = port_format_problem(port_format)
    if why:
        raise FabricPlanError(host, f"{PORT_FORMAT_VAR} {shown(port_format)} {why}", PORT_FORMAT_VAR)
    netmask = str(net.netmask)
    plans = []
    for chip, address in enumerate(addresses):
        port = (slot if slot is not None else 0) * chips + chip + 1
        try:
            port_name = port_format.format(port=port, slot=slot if slot is not None else "", chip=chip)
        except (KeyError, IndexError, ValueError) as exc:
            raise FabricPlanError(host, f"{PORT_FORMAT_VAR} {shown(port_format)} cannot be formatted "
                                  f"({exc}): use the fields {{port}}, {{slot}} and {{chip}}",
                                  PORT_FORMAT_VAR) from None
        plans.append(ChipPlan(chip, address, netmask, gateway, str(switch), port_name))
    return plans


# What npu_fabric_port_format may hold: text and the fields {port}, {slot}, {chip}, each with at most a
# short numeric spec (`{port:02d}`, `{chip:>3}`): no attribute or index access (`{chip.__class__}`), no
# conversion, no width past 2 digits (`{port:300000000}` would build a 300 MB string).
PORT_FIELDS = ("port", "slot", "chip")
_PORT_SPEC = re.compile(r"0?[<>^]?\d{0,2}d?")
MAX_PORT_FORMAT = 64


def port_format_problem(port_format: str) -> str | None:
    """Why `port_format` is not a switch port template ufcctl formats, or None."""
    if len(port_format) > MAX_PORT_FORMAT:
        return f"is longer than {MAX_PORT_FORMAT} characters"
    try:
        parts = list(string.Formatter().parse(port_format))
    except ValueError as err:
        return f"is not a format ({err})"
    for text, field, spec, conversion in parts:
        if any(not ch.isprintable() for ch in text):
            return "holds a control character"
        if field is None:
            continue
        if field not in PORT_FIELDS or conversion or not _PORT_SPEC.fullmatch(spec or ""):
            return ("may use only {port}, {slot} and {chip}, each with at most a short numeric spec such as "
                    "{port:02d}")
    return None


def _gateway(host: str, hostvars: Mapping[str, Any], net: ipaddress.IPv4Network, first: int) -> str:
    given = hostvars.get(GATEWAY_VAR)
    if given in (None, ""):
        return str(ipaddress.IPv4Address(first))
    try:
        gw = ipaddress.IPv4Address(str(given))
    except ValueError:
        raise FabricPlanError(host, f"{GATEWAY_VAR} {shown(given)} is not an IPv4 address",
                              GATEWAY_VAR) from None
    if gw not in net or gw in (net.network_address, net.broadcast_address):
        raise FabricPlanError(host, f"{GATEWAY_VAR} {gw} is not a usable address of {net}", GATEWAY_VAR)
    return str(gw)


def _explicit(host: str, value: Any, chips: int, net: ipaddress.IPv4Network) -> list[str]:
    if not isinstance(value, list) or len(value) != chips:
        raise FabricPlanError(host, f"{DEVICE_IPS_VAR} must list {chips} addresses, one per chip in "
                              "chip order", DEVICE_IPS_VAR)
    out = []
    for chip, text in enumerate(value):
        try:
            addr = ipaddress.IPv4Address(str(text))
        except ValueError:
            raise FabricPlanError(host, f"chip {chip}: {DEVICE_IPS_VAR} entry {shown(text)} is not an IPv4 "
                                  "address", DEVICE_IPS_VAR) from None
        if addr not in net or addr in (net.network_address, net.broadcast_address):
            raise FabricPlanError(host, f"chip {chip}: device IP {addr} is outside {SUBNET_VAR} {net} (or is "
                                  "its network or broadcast address)", DEVICE_IPS_VAR)
        out.append(str(addr))
    return out


@dataclass(frozen=True, slots=True)
class Clash:
    """Two chips (or a chip and a gateway) that the plans give the same address or switch port."""

    host: str
    chip: int
    other_host: str
    other_chip: int | None  # None: the other is that host's gateway
    what: str  # "device IP 10.0.0.2", "port tor-01/3"

    def __str__(self) -> str:
        other = (f"{self.other_host} chip {self.other_chip}" if self.other_chip is not None
                 else f"the gateway of {self.other_host}")
        return f"chip {self.chip}: {self.what} is also {other}'s"


def clashes(plans: Iterable[tuple[str, list[ChipPlan]]]) -> list[Clash]:
    """Addresses and switch ports used twice across the inventory, in inventory order."""
    by_address: dict[str, tuple[str, int]] = {}
    by_port: dict[tuple[str, str], tuple[str, int]] = {}
    gateways: dict[str, str] = {}
    out: list[Clash] = []
    listed = list(plans)
    for host, chips in listed:
        for c in chips:
            gateways.setdefault(c.gateway, host)
    for host, chips in listed:
        for c in chips:
            seen = by_address.setdefault(c.address, (host, c.chip))
            if seen != (host, c.chip):
                out.append(Clash(host, c.chip, seen[0], seen[1], f"device IP {c.address}"))
            elif c.address in gateways:
                out.append(Clash(host, c.chip, gateways[c.address], None, f"device IP {c.address}"))
            key = (c.switch, c.port)
            seen = by_port.setdefault(key, (host, c.chip))
            if seen != (host, c.chip):
                out.append(Clash(host, c.chip, seen[0], seen[1], f"switch port {c.switch} {c.port}"))
    return out
