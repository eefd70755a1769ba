"""Decoded Kubernetes objects (dicts) to the placement model; a field of the wrong type is a ParseError."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.placement import keys
from ufcctl.domain.placement.model import (
    AscendJob,
    DeviceHealth,
    Node,
    Pod,
    PodGroup,
    RankDevice,
    RankServer,
    RankTable,
    ReplicaSpec,
    TorMap,
)
from ufcctl.domain.placement.profiles import DEFAULT_ACCELERATOR_TYPE, PROFILES

_EMPTY: Mapping[str, Any] = {}


class ParseError(ValueError):
    """An object the validator cannot read; names the file (when known), the object and the field."""

    def __init__(self, subject: str, message: str, source: str | None = None, hint: str | None = None):
        self.subject = subject
        self.problem = message
        self.source = source
        self.hint = hint
        super().__init__(f"{source}: {subject}: {message}" if source else f"{subject}: {message}")


@dataclass(frozen=True, slots=True)
class ParsedObjects:
    """Every object of a kind the validator reads; other kinds were skipped."""

    nodes: tuple[Node, ...]
    pods: tuple[Pod, ...]
    ascend_jobs: tuple[AscendJob, ...]
    pod_groups: tuple[PodGroup, ...]
    health: tuple[DeviceHealth, ...]
    tor: TorMap | None
    rank_tables: tuple[RankTable, ...]


class _Reader:
    """Typed access to one object's fields; every failure names the object and the field path."""

    __slots__ = ("subject", "source")

    def __init__(self, subject: str, source: str | None):
        self.subject = subject
        self.source = source

    def fail(self, message: str) -> ParseError:
        return ParseError(self.subject, message, self.source)

    def mapping(self, parent: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        value = parent.get(key)
        if value is None:
            return _EMPTY
        if not isinstance(value, dict):
            raise self.fail(f"{path} must be a mapping, got {_kind(value)}")
        return value

    def string(self, parent: Mapping[str, Any], key: str, path: str) -> str | None:
        value = parent.get(key)
        if value is None or isinstance(value, str):
            return value
        raise self.fail(f"{path} must be a string, got {_kind(value)}")

    def items(self, parent: Mapping[str, Any], key: str, path: str) -> list[Any]:
        value = parent.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(f"{path} must be a list, got {_kind(value)}")
        return value

    def integer(self, value: Any, path: str) -> int:
        """An integer given as a number or a decimal string (how annotations and quantities arrive)."""
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            text = value.strip()
            digits = text[1:] if text[:1] == "-" else text
            if digits.isascii() and digits.isdigit():
                return int(text)
            raise self.fail(f"{path} must be an integer, got {value!r}")
        raise self.fail(f"{path} must be an integer, got {_kind(value)}")

    def optional_integer(self, parent: Mapping[str, Any], key: str, path: str) -> int | None:
        value = parent.get(key)
        return None if value is None else self.integer(value, path)

    def npu_request(self, pod_spec: Mapping[str, Any], path: str) -> int:
        """Sum of huawei.com/Ascend910 requests over the containers of a pod spec."""
        total = 0
        for index, container in enumerate(self.items(pod_spec, "containers", f"{path}.containers")):
            where = f"{path}.containers[{index}]"
            if not isinstance(container, dict):
                raise self.fail(f"{where} must be a mapping, got {_kind(container)}")
            resources = self.mapping(container, "resources", f"{where}.resources")
            field = "requests"
            value = self.mapping(resources, "requests", f"{where}.resources.requests").get(keys.NPU_RESOURCE)
            if value is None:
                # The API server defaults an extended resource's request to its limit; a job file
                # written for `kubectl apply` may carry the limit only.
                field = "limits"
                value = self.mapping(resources, "limits", f"{where}.resources.limits").get(keys.NPU_RESOURCE)
            if value is not None:
                count = self.integer(value, f"{where}.resources.{field}[{keys.NPU_RESOURCE}]")
                if count < 0:
                    raise self.fail(f"{where}.resources.{field}[{keys.NPU_RESOURCE}] is negative")
                total += count
        return total


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def iter_objects(document: Any, source: str | None, position: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The objects of one decoded document: itself, or its `items` when it is a List."""
    if document is None:  # an empty YAML document
        return
    if not isinstance(document, dict):
        raise ParseError(position, f"not a Kubernetes object (got {_kind(document)})", source)
    kind = document.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ParseError(position, "not a Kubernetes object (no `kind`)", source)
    if kind.endswith("List") and "items" in document:
        items = document["items"]
        if not isinstance(items, list):
            raise ParseError(position, f"{kind}.items must be a list, got {_kind(items)}", source)
        for index, item in enumerate(items):
            yield from iter_objects(item, source, f"{position} items[{index}]")
    else:
        yield position, document


def parse_objects(documents: Iterable[tuple[str | None, Any]]) -> ParsedObjects:
    """Read every Node, Pod, ConfigMap, PodGroup and AscendJob of (source, decoded document) pairs.

    An object given twice (overlapping files) counts once, the later copy winning, as `kubectl apply` would.
    """
    nodes: dict[str, Node] = {}
    pods: dict[str, Pod] = {}
    ascend_jobs: dict[str, AscendJob] = {}
    pod_groups: dict[str, PodGroup] = {}
    health: dict[str, DeviceHealth] = {}
    rank_tables: dict[str, RankTable] = {}
    tor: TorMap | None = None
    for number, (source, document) in enumerate(documents):
        for position, obj in iter_objects(document, source, f"document {number + 1}"):
            kind = obj["kind"]
            if kind == "Pod":
                pod = parse_pod(obj, source, position)
                if pod is not None:
                    pods[pod.ref] = pod
            elif kind == "Node":
                node = parse_node(obj, source, position)
                nodes[node.name] = node
            elif kind == "ConfigMap":
                parsed = parse_configmap(obj, source, position)
                if isinstance(parsed, DeviceHealth):
                    health[parsed.node] = parsed
                elif isinstance(parsed, RankTable):
                    rank_tables[parsed.ref] = parsed
                elif isinstance(parsed, TorMap):
                    tor = parsed
            elif kind == keys.POD_GROUP_KIND and _group(obj) == keys.POD_GROUP_GROUP:
                group = parse_pod_group(obj, source, position)
                pod_groups[group.ref] = group
            elif kind == keys.ASCEND_JOB_KIND and _group(obj) == keys.ASCEND_JOB_GROUP:
                job = parse_ascend_job(obj, source, position)
                ascend_jobs[job.ref] = job
    return ParsedObjects(
        tuple(nodes.values()),
        tuple(pods.values()),
        tuple(ascend_jobs.values()),
        tuple(pod_groups.values()),
        tuple(health.values()),
        tor,
        tuple(rank_tables.values()),
    )


def _group(obj: Mapping[str, Any]) -> str:
    api_version = obj.get("apiVersion")
    return api_version.split("/", 1)[0] if isinstance(api_version, str) else ""


def _metadata(
    obj: Mapping[str, Any], kind: str, source: str | None, position: str
) -> tuple[_Reader, Mapping]:
    """The reader for an object, named `Kind namespace/name`, and its metadata."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        raise ParseError(f"{kind} at {position}", "metadata must be a mapping", source)
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ParseError(f"{kind} at {position}", "metadata.name must be a non-empty string", source)
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise ParseError(
            f"{kind} {name}", f"metadata.namespace must be a string, got {_kind(namespace)}", source
        )
    subject = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
    return _Reader(subject, source), metadata


def _owner(reader: _Reader, metadata: Mapping[str, Any], kind: str) -> str | None:
    for index, ref in enumerate(reader.items(metadata, "ownerReferences", "metadata.ownerReferences")):
        if not isinstance(ref, dict):
            raise reader.fail(f"metadata.ownerReferences[{index}] must be a mapping")
        if ref.get("kind") == kind:
            return reader.string(ref, "name", f"metadata.ownerReferences[{index}].name")
    return None


def parse_node(obj: Mapping[str, Any], source: str | None, position: str) -> Node:
    reader, metadata = _metadata(obj, "Node", source, position)
    labels = reader.mapping(metadata, "labels", "metadata.labels")
    annotations = reader.mapping(metadata, "annotations", "metadata.annotations")
    accelerator_type = reader.string(labels, keys.ACCELERATOR_TYPE_LABEL, "label accelerator-type") or None
    super_pod_id = reader.optional_integer(
        annotations, keys.SUPER_POD_ID_ANNOTATION, f"annotation {keys.SUPER_POD_ID_ANNOTATION}"
    )
    status = reader.mapping(obj, "status", "status")
    ip = None
    for index, address in enumerate(reader.items(status, "addresses", "status.addresses")):
        if not isinstance(address, dict):
            raise reader.fail(f"status.addresses[{index}] must be a mapping")
        if address.get("type") == "InternalIP":
            ip = reader.string(address, "address", f"status.addresses[{index}].address")
            break
    capacity = 0
    for field_name in ("allocatable", "capacity"):
        resources = reader.mapping(status, field_name, f"status.{field_name}")
        if keys.NPU_RESOURCE in resources:
            capacity = reader.integer(
                resources[keys.NPU_RESOURCE], f"status.{field_name}[{keys.NPU_RESOURCE}]"
            )
            break
    hardware_type = accelerator_type or DEFAULT_ACCELERATOR_TYPE
    # An unknown type is an error only when an NPU pod sits on the node (state.py raises it then).
    profile = PROFILES.get(hardware_type) if hardware_type in PROFILES else None
    return Node(metadata["name"], accelerator_type, super_pod_id, ip, capacity, profile, source)


def parse_pod(obj: Mapping[str, Any], source: str | None, position: str) -> Pod | None:
    """The pod, or None for a pod no rule reads: no NPU request and in no job (DaemonSets, system pods)."""
    reader, metadata = _metadata(obj, "Pod", source, position)
    labels = reader.mapping(metadata, "labels", "metadata.labels")
    annotations = reader.mapping(metadata, "annotations", "metadata.annotations")
    spec = reader.mapping(obj, "spec", "spec")
    request = reader.npu_request(spec, "spec")
    group_name = (
        reader.string(annotations, keys.GROUP_NAME_ANNOTATION, f"annotation {keys.GROUP_NAME_ANNOTATION}")
        or None
    )
    owner = _owner(reader, metadata, keys.ASCEND_JOB_KIND)
    job_label = reader.string(labels, keys.JOB_NAME_LABEL, f"label {keys.JOB_NAME_LABEL}") or None
    if not (request or group_name or owner or job_label):
        return None  # half the pods of a large cluster; skipping them is most of the parse time saved
    namespace = metadata.get("namespace") or "default"
    name = metadata["name"]
    status = reader.mapping(obj, "status", "status")
    node_name = reader.string(spec, "nodeName", "spec.nodeName") or None
    active = reader.string(status, "phase", "status.phase") not in keys.TERMINAL_PHASES
    return Pod(
        namespace=namespace,
        name=name,
        ref=f"{namespace}/{name}",
        uid=reader.string(metadata, "uid", "metadata.uid"),
        node_name=node_name,
        placed=node_name is not None and active,
        active=active,
        request=request,
        selector=reader.string(
            reader.mapping(spec, "nodeSelector", "spec.nodeSelector"),
            keys.ACCELERATOR_TYPE_LABEL,
            "spec.nodeSelector[accelerator-type]",
        ),
        allocation=reader.string(
            annotations, keys.ALLOCATION_ANNOTATION, f"annotation {keys.ALLOCATION_ANNOTATION}"
        ),
        rank_index=reader.optional_integer(
            annotations, keys.RANK_INDEX_ANNOTATION, f"annotation {keys.RANK_INDEX_ANNOTATION}"
        ),
        group_name=group_name,
        owner_ascend_job=owner,
        job_name_label=job_label,
        labels=labels,
        annotations=annotations,
        source=source,
    )


def parse_pod_group(obj: Mapping[str, Any], source: str | None, position: str) -> PodGroup:
    reader, metadata = _metadata(obj, "PodGroup", source, position)
    namespace = metadata.get("namespace") or "default"
    spec = reader.mapping(obj, "spec", "spec")
    min_resources = reader.mapping(spec, "minResources", "spec.minResources")
    npu = min_resources.get(keys.NPU_RESOURCE)
    return PodGroup(
        namespace=namespace,
        name=metadata["name"],
        ref=f"{namespace}/{metadata['name']}",
        min_member=reader.optional_integer(spec, "minMember", "spec.minMember"),
        owner_ascend_job=_owner(reader, metadata, keys.ASCEND_JOB_KIND),
        npu_min_resources=0
        if npu is None
        else reader.integer(npu, f"spec.minResources[{keys.NPU_RESOURCE}]"),
        labels=reader.mapping(metadata, "labels", "metadata.labels"),
        annotations=reader.mapping(metadata, "annotations", "metadata.annotations"),
        source=source,
    )


def parse_ascend_job(obj: Mapping[str, Any], source: str | None, position: str) -> AscendJob:
    reader, metadata = _metadata(obj, "AscendJob", source, position)
    namespace = metadata.get("namespace") or "default"
    spec = reader.mapping(obj, "spec", "spec")
    policy = reader.mapping(
        reader.mapping(spec, "runPolicy", "spec.runPolicy"),
        "schedulingPolicy",
        "spec.runPolicy.schedulingPolicy",
    )
    specs = []
    for replica_type, replica in sorted(reader.mapping(spec, "replicaSpecs", "spec.replicaSpecs").items()):
        path = f"spec.replicaSpecs.{replica_type}"
        if not isinstance(replica, dict):
            raise reader.fail(f"{path} must be a mapping, got {_kind(replica)}")
        template = reader.mapping(replica, "template", f"{path}.template")
        template_meta = reader.mapping(template, "metadata", f"{path}.template.metadata")
        pod_spec = reader.mapping(template, "spec", f"{path}.template.spec")
        replicas = reader.optional_integer(replica, "replicas", f"{path}.replicas")
        specs.append(
            ReplicaSpec(
                name=replica_type,
                # ascend-operator defaults.go: replicas default to 1.
                replicas=1 if replicas is None else replicas,
                request=reader.npu_request(pod_spec, f"{path}.template.spec"),
                selector=reader.string(
                    reader.mapping(pod_spec, "nodeSelector", f"{path}.template.spec.nodeSelector"),
                    keys.ACCELERATOR_TYPE_LABEL,
                    f"{path}.template.spec.nodeSelector[accelerator-type]",
                ),
                labels=reader.mapping(template_meta, "labels", f"{path}.template.metadata.labels"),
                annotations=reader.mapping(
                    template_meta, "annotations", f"{path}.template.metadata.annotations"
                ),
            )
        )
    return AscendJob(
        namespace=namespace,
        name=metadata["name"],
        ref=f"{namespace}/{metadata['name']}",
        labels=reader.mapping(metadata, "labels", "metadata.labels"),
        annotations=reader.mapping(metadata, "annotations", "metadata.annotations"),
        min_available=reader.optional_integer(
            policy, "minAvailable", "spec.runPolicy.schedulingPolicy.minAvailable"
        ),
        replica_specs=tuple(specs),
        source=source,
    )


def parse_configmap(obj: Mapping[str, Any], source: str | None, position: str) -> object | None:
    """A DeviceHealth, TorMap or RankTable for the ConfigMaps the rules read; None for any other."""
    reader, metadata = _metadata(obj, "ConfigMap", source, position)
    name: str = metadata["name"]
    namespace = metadata.get("namespace") or "default"
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


def _json_value(reader: _Reader, obj: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    raw = reader.string(reader.mapping(obj, "data", "data"), key, f"data[{key}]")
    if raw is None or not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except ValueError as err:
        raise reader.fail(f"data[{key}] is not valid JSON: {err}") from None
    if not isinstance(value, dict):
        raise reader.fail(f"data[{key}] must be a JSON object, got {_kind(value)}")
    return value


def _chip_names(reader: _Reader, value: Any, path: str) -> frozenset[int]:
    """A comma list of chip names ("Ascend910-3,Ascend910-5") as physical chip ids."""
    if value is None:
        return frozenset()
    if not isinstance(value, str):
        raise reader.fail(f"{path} must be a comma-separated string, got {_kind(value)}")
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


def chip_id(entry: str) -> int | None:
    """The physical id in "Ascend910-<n>", or None when the entry is not of that form."""
    if entry.startswith(keys.CHIP_NAME_PREFIX):
        digits = entry[len(keys.CHIP_NAME_PREFIX) :]
        if digits.isascii() and digits.isdigit():
            return int(digits)
    return None


def _device_health(reader: _Reader, node: str, data: Mapping[str, Any]) -> DeviceHealth:
    path = f"data[{keys.DEVICE_INFO_KEY}]"
    info = reader.mapping(data, "DeviceInfo", f"{path}.DeviceInfo")
    devices = reader.mapping(info, "DeviceList", f"{path}.DeviceInfo.DeviceList")
    return DeviceHealth(
        node=node,
        unhealthy=_chip_names(reader, devices.get(keys.UNHEALTHY_KEY), f"{path} {keys.UNHEALTHY_KEY}"),
        network_unhealthy=_chip_names(
            reader, devices.get(keys.NETWORK_UNHEALTHY_KEY), f"{path} {keys.NETWORK_UNHEALTHY_KEY}"
        ),
        super_pod_id=reader.optional_integer(data, "SuperPodID", f"{path}.SuperPodID"),
    )


def _tor_map(reader: _Reader, data: Mapping[str, Any]) -> TorMap:
    path = f"data[{keys.TOR_INFO_KEY}]"
    tor_by_ip: dict[str, object] = {}
    for index, tor in enumerate(reader.items(data, "server_list", f"{path}.server_list")):
        where = f"{path}.server_list[{index}]"
        if not isinstance(tor, dict):
            raise reader.fail(f"{where} must be a mapping")
        tor_id = tor.get("tor_id", tor.get("tor_ip"))
        for number, server in enumerate(reader.items(tor, "server", f"{where}.server")):
            if not isinstance(server, dict):
                raise reader.fail(f"{where}.server[{number}] must be a mapping")
            ip = reader.string(server, "server_ip", f"{where}.server[{number}].server_ip")
            if ip:
                tor_by_ip[ip] = tor_id
    return TorMap(tor_by_ip)


def _rank_table(reader: _Reader, namespace: str, job: str, ref: str, data: Mapping[str, Any]) -> RankTable:
    path = f"data[{keys.RANK_TABLE_KEY}]"
    servers = []
    for index, server in enumerate(reader.items(data, "server_list", f"{path}.server_list")):
        where = f"{path}.server_list[{index}]"
        if not isinstance(server, dict):
            raise reader.fail(f"{where} must be a mapping")
        devices = []
        for number, device in enumerate(reader.items(server, "device", f"{where}.device")):
            if not isinstance(device, dict):
                raise reader.fail(f"{where}.device[{number}] must be a mapping")
            devices.append(RankDevice(device.get("device_id"), device.get("rank_id")))
        servers.append(RankServer(server.get("server_id"), server.get("host_ip"), tuple(devices)))
    return RankTable(namespace, job, ref, data.get("status"), data.get("server_count"), tuple(servers))
