"""Decoded Kubernetes objects (dicts) to the placement model; a field of the wrong type is a ParseError."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.placement import keys
from ufcctl.domain.placement.configmaps import parse_configmap
from ufcctl.domain.placement.model import (
    AscendJob,
    DeviceHealth,
    Node,
    Pod,
    PodGroup,
    RankTable,
    ReplicaSpec,
    TorMap,
)
from ufcctl.domain.placement.profiles import DEFAULT_ACCELERATOR_TYPE, PROFILES
from ufcctl.domain.placement.reader import ParseError, Reader, kind_of, position_text

__all__ = ["MAX_LIST_DEPTH", "ParseError", "ParsedObjects", "iter_objects", "parse_objects"]

# kubectl writes one List per `get` and never nests them; a hand-joined snapshot may wrap Lists in
# a List. Deeper is a mistake, and the bound keeps reading them flat and cheap (README "Limits").
MAX_LIST_DEPTH = 4

# Field paths named in errors, built once rather than per object.
_GROUP_NAME = f"annotation {keys.GROUP_NAME_ANNOTATION}"
_JOB_NAME = f"label {keys.JOB_NAME_LABEL}"
_ALLOCATION = f"annotation {keys.ALLOCATION_ANNOTATION}"
_RANK_INDEX = f"annotation {keys.RANK_INDEX_ANNOTATION}"
_SUPER_POD_ID = f"annotation {keys.SUPER_POD_ID_ANNOTATION}"
_SELECTOR = f"spec.nodeSelector[{keys.ACCELERATOR_TYPE_LABEL}]"
_LABEL_TYPE = f"label {keys.ACCELERATOR_TYPE_LABEL}"


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


def iter_objects(
    document: Any, source: str | None, position: tuple[int, ...]
) -> Iterator[tuple[tuple[int, ...], dict[str, Any]]]:
    """The objects of one decoded document: itself, or its `items` when it is a List (Lists nested
    at most MAX_LIST_DEPTH deep)."""
    if document is None:  # an empty YAML document
        return
    if not isinstance(document, dict):
        raise ParseError(
            position_text(position), f"not a Kubernetes object (got {kind_of(document)})", source
        )
    kind = document.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ParseError(position_text(position), "not a Kubernetes object (no `kind`)", source)
    if kind.endswith("List") and "items" in document:
        if len(position) > MAX_LIST_DEPTH:  # position: the document's number, then one index per List
            raise ParseError(
                position_text(position),
                f"Lists nested more than {MAX_LIST_DEPTH} deep",
                source,
                "put the objects in one List, as `kubectl get` writes them",
            )
        items = document["items"]
        if not isinstance(items, list):
            raise ParseError(
                position_text(position), f"{kind}.items must be a list, got {kind_of(items)}", source
            )
        for index, item in enumerate(items):
            item_kind = item.get("kind") if isinstance(item, dict) else None
            if isinstance(item_kind, str) and item_kind and not item_kind.endswith("List"):
                yield (*position, index), item  # the common case, without recursing
            else:
                yield from iter_objects(item, source, (*position, index))
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
    for number, (source, document) in enumerate(documents, 1):
        for position, obj in iter_objects(document, source, (number,)):
            kind = obj["kind"]
            if kind == "Pod":
                pod = parse_pod(_reader(obj, kind, source, position), obj)
                if pod is not None:
                    pods[pod.ref] = pod
            elif kind == "Node":
                node = parse_node(_reader(obj, kind, source, position), obj)
                nodes[node.name] = node
            elif kind == "ConfigMap":
                parsed = parse_configmap(_reader(obj, kind, source, position), obj)
                if isinstance(parsed, DeviceHealth):
                    health[parsed.node] = parsed
                elif isinstance(parsed, RankTable):
                    rank_tables[parsed.ref] = parsed
                elif isinstance(parsed, TorMap):
                    tor = parsed
            elif kind == keys.POD_GROUP_KIND and _group(obj) == keys.POD_GROUP_GROUP:
                group = parse_pod_group(_reader(obj, kind, source, position), obj)
                pod_groups[group.ref] = group
            elif kind == keys.ASCEND_JOB_KIND and _group(obj) == keys.ASCEND_JOB_GROUP:
                job = parse_ascend_job(_reader(obj, kind, source, position), obj)
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


def _reader(obj: Mapping[str, Any], kind: str, source: str | None, position: tuple[int, ...]) -> Reader:
    """The reader for an object with a usable metadata.name; the object's position names it otherwise."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        raise ParseError(f"{kind} at {position_text(position)}", "metadata must be a mapping", source)
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ParseError(
            f"{kind} at {position_text(position)}", "metadata.name must be a non-empty string", source
        )
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise ParseError(
            f"{kind} {name}", f"metadata.namespace must be a string, got {kind_of(namespace)}", source
        )
    return Reader(kind, namespace, name, source)


def _owner(reader: Reader, metadata: Mapping[str, Any], kind: str) -> str | None:
    for index, ref in enumerate(reader.items(metadata, "ownerReferences", "metadata.ownerReferences")):
        ref = reader.element(ref, "metadata.ownerReferences", index)
        if ref.get("kind") == kind:
            return reader.string(ref, "name", f"metadata.ownerReferences[{index}].name")
    return None


def parse_node(reader: Reader, obj: Mapping[str, Any]) -> Node:
    metadata = obj["metadata"]
    labels = reader.mapping(metadata, "labels", "metadata.labels")
    annotations = reader.mapping(metadata, "annotations", "metadata.annotations")
    accelerator_type = reader.string(labels, keys.ACCELERATOR_TYPE_LABEL, _LABEL_TYPE) or None
    super_pod_id = reader.optional_integer(annotations, keys.SUPER_POD_ID_ANNOTATION, _SUPER_POD_ID)
    status = reader.mapping(obj, "status", "status")
    ip = None
    for index, address in enumerate(reader.items(status, "addresses", "status.addresses")):
        address = reader.element(address, "status.addresses", index)
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
    return Node(reader.name, accelerator_type, super_pod_id, ip, capacity, profile, reader.source)


def parse_pod(reader: Reader, obj: Mapping[str, Any]) -> Pod | None:
    """The pod, or None for a pod no rule reads: no NPU request and in no job (DaemonSets, system pods)."""
    metadata = obj["metadata"]
    labels = reader.mapping(metadata, "labels", "metadata.labels")
    annotations = reader.mapping(metadata, "annotations", "metadata.annotations")
    spec = reader.mapping(obj, "spec", "spec")
    request = reader.npu_request(spec, "spec")
    group_name = reader.string(annotations, keys.GROUP_NAME_ANNOTATION, _GROUP_NAME) or None
    owner = _owner(reader, metadata, keys.ASCEND_JOB_KIND)
    job_label = reader.string(labels, keys.JOB_NAME_LABEL, _JOB_NAME) or None
    if not (request or group_name or owner or job_label):
        return None  # half the pods of a large cluster; skipping them is most of the parse time saved
    namespace = reader.namespace or "default"
    status = reader.mapping(obj, "status", "status")
    node_name = reader.string(spec, "nodeName", "spec.nodeName") or None
    active = reader.string(status, "phase", "status.phase") not in keys.TERMINAL_PHASES
    return Pod(
        namespace=namespace,
        name=reader.name,
        ref=f"{namespace}/{reader.name}",
        uid=reader.string(metadata, "uid", "metadata.uid"),
        node_name=node_name,
        placed=node_name is not None and active,
        active=active,
        request=request,
        selector=reader.string(
            reader.mapping(spec, "nodeSelector", "spec.nodeSelector"), keys.ACCELERATOR_TYPE_LABEL, _SELECTOR
        ),
        allocation=reader.string(annotations, keys.ALLOCATION_ANNOTATION, _ALLOCATION),
        rank_index=reader.optional_integer(annotations, keys.RANK_INDEX_ANNOTATION, _RANK_INDEX),
        group_name=group_name,
        owner_ascend_job=owner,
        job_name_label=job_label,
        labels=labels,
        annotations=annotations,
        source=reader.source,
    )


def parse_pod_group(reader: Reader, obj: Mapping[str, Any]) -> PodGroup:
    metadata = obj["metadata"]
    namespace = reader.namespace or "default"
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
        source=reader.source,
    )


def parse_ascend_job(reader: Reader, obj: Mapping[str, Any]) -> AscendJob:
    metadata = obj["metadata"]
    namespace = reader.namespace or "default"
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
            raise reader.fail(f"{path} must be a mapping, got {kind_of(replica)}")
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
        source=reader.source,
    )
