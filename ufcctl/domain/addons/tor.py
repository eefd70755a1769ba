"""The `kube-system/basic-tor-node-cm` ConfigMap (MindCluster switch affinity) built from inventory vars.

Format (docs/reference/ascend.md §2; ascend-for-volcano plugin/tor.go): data key `tor_info` holds JSON
{"version": "1.0", "tor_count": N, "server_list": [{"tor_id": int, "tor_ip": str,
"server": [{"server_ip": str, "npu_count": int, "slice_id": int}]}]}; nodes are matched by IP.
`tor_id` is an int in the Go struct, so string ids like "tor-07" are numbered by their digits.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

NAME = "basic-tor-node-cm"
NAMESPACE = "kube-system"  # since MindCluster 6.0.0 (older 5.x tooling used volcano-system)
# A ConfigMap's data may hold at most 1 MiB (apimachinery's validation of ConfigMap size).
MAX_CONFIGMAP_DATA_BYTES = 1024 * 1024
_DIGITS = re.compile(r"(\d+)\D*$")


class TorMapError(ValueError):
    """The inventory cannot give a correct ToR map; `problems` has one line per host or ToR."""

    def __init__(self, problems: list[str]):
        super().__init__(
            f"{len(problems)} problem(s) building {NAMESPACE}/{NAME}: " + "; ".join(problems[:5])
        )
        self.problems = problems


@dataclass(frozen=True)
class TorServer:
    host: str
    tor: str  # npu_tor_id as written in the inventory
    tor_ip: str
    server_ip: str
    npu_count: int
    slice_id: int


@dataclass(frozen=True)
class TorConfigMap:
    body: Mapping[str, Any]  # the ConfigMap object
    data_bytes: int  # size of its data (what the 1 MiB limit counts)
    servers: int
    tors: int


def _tor_number(tor: Any) -> int | None:
    if isinstance(tor, int) and not isinstance(tor, bool):
        return tor
    match = _DIGITS.search(str(tor))
    return int(match.group(1)) if match else None


def _integer(value: Any) -> Any:
    """Digit strings (INI inventories, add_host) as ints; anything else unchanged for the checks."""
    return int(value) if isinstance(value, str) and value.strip().isdigit() else value


def _ip(value: Any) -> str | None:
    try:
        return str(ipaddress.ip_address(str(value)))
    except ValueError:
        return None


def servers_from_hostvars(
    hosts: list[str], hostvars: Mapping[str, Mapping[str, Any]], chips: Mapping[str, int]
) -> tuple[list[TorServer], list[str]]:
    """The ToR servers among `hosts` (those with npu_tor_id); problems name the host and the fix.

    `chips` maps accelerator-type -> NPUs per node; a host's `npu_count` var wins over it.
    """
    servers, problems = [], []
    for host in hosts:
        hv = hostvars[host]
        tor = hv.get("npu_tor_id")
        if tor is None or tor == "":
            continue
        address = hv.get("npu_node_ip") or hv.get("ansible_host") or host
        server_ip = _ip(address)
        if server_ip is None:
            problems.append(f"host {host}: server_ip {address!r} is not an IP address (set npu_node_ip)")
        count = _integer(hv.get("npu_count", chips.get(str(hv.get("npu_accelerator_type", "")), 0)))
        slice_id = _integer(hv.get("npu_slice_id"))
        if not isinstance(slice_id, int) or isinstance(slice_id, bool) or slice_id < 0:
            problems.append(f"host {host}: npu_slice_id {slice_id!r} must be an integer >= 0")
        if not isinstance(count, int) or count <= 0:
            accel = hv.get("npu_accelerator_type")
            problems.append(f"host {host}: no NPU count for accelerator-type {accel!r} (set npu_count)")
        if server_ip and isinstance(slice_id, int) and isinstance(count, int) and count > 0:
            tor_ip = str(hv.get("npu_tor_ip") or "")
            servers.append(TorServer(host, str(tor), tor_ip, server_ip, count, slice_id))
    return servers, problems


def build_tor_info(servers: list[TorServer]) -> tuple[dict[str, Any], list[str]]:
    """The tor_info document, ToRs in first-seen order; problems for clashing ids, IPs and slices."""
    tors: dict[str, list[TorServer]] = {}
    for server in servers:
        tors.setdefault(server.tor, []).append(server)
    problems: list[str] = []
    numbers: dict[int, str] = {}
    seen_ips: dict[str, str] = {}
    server_list = []
    for tor, members in tors.items():
        number = _tor_number(tor)
        if number is None:
            problems.append(f"ToR {tor!r}: tor_id must be an integer; use an id ending in digits (tor-07)")
        elif number in numbers:
            problems.append(f"ToR {tor!r}: its number {number} is also ToR {numbers[number]!r}'s")
        else:
            numbers[number] = tor
        tor_ips = sorted({m.tor_ip for m in members})
        if len(tor_ips) > 1:
            problems.append(f"ToR {tor!r}: hosts disagree on npu_tor_ip ({', '.join(tor_ips)})")
        slices: dict[int, str] = {}
        for m in members:
            if m.slice_id in slices:
                problems.append(
                    f"host {m.host}: npu_slice_id {m.slice_id} taken by {slices[m.slice_id]} (ToR {tor})"
                )
            slices.setdefault(m.slice_id, m.host)
            if m.server_ip in seen_ips:
                problems.append(f"host {m.host}: server_ip {m.server_ip} is also {seen_ips[m.server_ip]}'s")
            seen_ips.setdefault(m.server_ip, m.host)
        entries = [
            {"server_ip": m.server_ip, "npu_count": m.npu_count, "slice_id": m.slice_id} for m in members
        ]
        server_list.append(
            {"tor_id": number if number is not None else -1, "tor_ip": tor_ips[0], "server": entries}
        )
    tor_count = max((len(m) for m in tors.values()), default=0)
    return {"version": "1.0", "tor_count": tor_count, "server_list": server_list}, problems


def tor_configmap(
    servers: list[TorServer], tor_level: str = "", limit: int = MAX_CONFIGMAP_DATA_BYTES
) -> TorConfigMap:
    """The ConfigMap, compact JSON; TorMapError when the inventory is inconsistent or it exceeds `limit`.

    It is not split when too big: Volcano reads exactly one ConfigMap by name, so a split map would
    silently lose ToRs. The error says by how much it is over.
    """
    info, problems = build_tor_info(servers)
    if problems:
        raise TorMapError(problems)
    data = {"tor_info": json.dumps(info, separators=(",", ":"))}
    if tor_level:
        data["tor_level"] = tor_level
    size = sum(len(k.encode()) + len(v.encode()) for k, v in data.items())
    if size > limit:
        raise TorMapError(
            [
                f"{NAMESPACE}/{NAME} would hold {size} bytes of data, over the {limit}-byte ConfigMap limit "
                f"({len(servers)} servers); Volcano reads one ConfigMap, so it cannot be split"
            ]
        )
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/managed-by": "ufcctl"},
        },
        "data": data,
    }
    return TorConfigMap(body, size, len(servers), len(info["server_list"]))
