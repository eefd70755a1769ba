"""The ConfigMaps the rules read: device info per node, the ToR map, and HCCL rank tables."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ufcctl.domain.placement import keys
from ufcctl.domain.placement.model import DeviceHealth, RankDevice, RankServer, RankTable, TorMap
from ufcctl.domain.placement.reader import MAX_DIGITS, Reader, kind_of

_DEVICE_INFO = f"data[{keys.DEVICE_INFO_KEY}]"
_TOR_INFO = f"data[{keys.TOR_INFO_KEY}]"
_RANK_TABLE = f"data[{keys.RANK_TABLE_KEY}]"


def parse_configmap(reader: Reader, obj: Mapping[str, Any]) -> DeviceHealth | TorMap | RankTable | None:
    """A DeviceHealth, TorMap or RankTable for the ConfigMaps the rules read; None for any other."""
    name, namespace = reader.name, reader.namespace or "default"
    if namespace == keys.SYSTEM_NAMESPACE and name.startswith(keys.DEVICE_INFO_PREFIX):
        data = _json_value(reader, obj, keys.DEVICE_INFO_KEY)
        return None if data is None else _device_health(reader, name[len(keys.DEVICE_INFO_PREFIX) :], data)
    if namespace == keys.SYSTEM_NAMESPACE and name == keys.TOR_CONFIGMAP:
        data = _json_value(reader, obj, keys.TOR_INFO_KEY)
        return TorMap({}) if data is None else _tor_map(reader, data)
    if name.startswith(keys.RANK_TABLE_PREFIX):
        data = _json_value(reader, obj, keys.RANK_TABLE_KEY)
        job = name[len(keys.RANK_TABLE_PREFIX) :]
        return None if data is None else _rank_table(reader, namespace, job, f"{namespace}/{name}", data)
    return None


def _json_value(reader: Reader, obj: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    raw = reader.string(reader.mapping(obj, "data", "data"), key, f"data[{key}]")
    if raw is None or not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except ValueError as err:
        raise reader.fail(f"data[{key}] is not valid JSON: {err}") from None
    if not isinstance(value, dict):
        raise reader.fail(f"data[{key}] must be a JSON object, got {kind_of(value)}")
    return value


def chip_id(entry: str) -> int | None:
    """The physical id in "Ascend910-<n>", or None when the entry is not of that form."""
    if entry.startswith(keys.CHIP_NAME_PREFIX):
        digits = entry[len(keys.CHIP_NAME_PREFIX) :]
        if digits.isascii() and digits.isdigit() and len(digits) <= MAX_DIGITS:
            return int(digits)
    return None


def _chip_names(reader: Reader, value: Any, path: str) -> frozenset[int]:
    """A comma list of chip names ("Ascend910-3,Ascend910-5") as physical chip ids."""
    if not value:
        return frozenset()
    if not isinstance(value, str):
        raise reader.fail(f"{path} must be a comma-separated string, got {kind_of(value)}")
    chips = set()
    for entry in value.split(","):
        entry = entry.strip()
        if not entry:
            continue
        chip = chip_id(entry)
        if chip is None:
            raise reader.fail(f"{path}: {entry!r} is not a chip name like {keys.CHIP_NAME_PREFIX}3")
        chips.add(chip)
    return frozenset(chips)


def _device_health(reader: Reader, node: str, data: Mapping[str, Any]) -> DeviceHealth:
    info = reader.mapping(data, "DeviceInfo", f"{_DEVICE_INFO}.DeviceInfo")
    devices = reader.mapping(info, "DeviceList", f"{_DEVICE_INFO}.DeviceInfo.DeviceList")
    return DeviceHealth(
        node=node,
        unhealthy=_chip_names(
            reader, devices.get(keys.UNHEALTHY_KEY), f"{_DEVICE_INFO} {keys.UNHEALTHY_KEY}"
        ),
        network_unhealthy=_chip_names(
            reader, devices.get(keys.NETWORK_UNHEALTHY_KEY), f"{_DEVICE_INFO} {keys.NETWORK_UNHEALTHY_KEY}"
        ),
        super_pod_id=reader.optional_integer(data, "SuperPodID", f"{_DEVICE_INFO}.SuperPodID"),
    )


def _tor_map(reader: Reader, data: Mapping[str, Any]) -> TorMap:
    tor_by_ip: dict[str, object] = {}
    for index, tor in enumerate(reader.items(data, "server_list", f"{_TOR_INFO}.server_list")):
        tor = reader.element(tor, f"{_TOR_INFO}.server_list", index)
        where = f"{_TOR_INFO}.server_list[{index}]"
        tor_id = tor.get("tor_id", tor.get("tor_ip"))
        for number, server in enumerate(reader.items(tor, "server", f"{where}.server")):
            server = reader.element(server, f"{where}.server", number)
            ip = reader.string(server, "server_ip", f"{where}.server[{number}].server_ip")
            if ip:
                tor_by_ip[ip] = tor_id
    return TorMap(tor_by_ip)


def _rank_table(reader: Reader, namespace: str, job: str, ref: str, data: Mapping[str, Any]) -> RankTable:
    servers = []
    for index, server in enumerate(reader.items(data, "server_list", f"{_RANK_TABLE}.server_list")):
        server = reader.element(server, f"{_RANK_TABLE}.server_list", index)
        devices = []
        for number, device in enumerate(
            reader.items(server, "device", f"{_RANK_TABLE}.server_list[{index}].device")
        ):
            device = reader.element(device, f"{_RANK_TABLE}.server_list[{index}].device", number)
            devices.append(RankDevice(device.get("device_id"), device.get("rank_id")))
        servers.append(RankServer(server.get("server_id"), server.get("host_ip"), tuple(devices)))
    return RankTable(namespace, job, ref, data.get("status"), data.get("server_count"), tuple(servers))
