"""Compact builders of the Kubernetes objects the placement rules read, for table-driven tests.

They write only the fields the contract names (the parser must not need more); the realistic, full
kubectl shapes live in tests/fixtures/placement/kubeobjects.py.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from ufcctl.domain.placement import Report, validate
from ufcctl.domain.placement.profiles import profile_for

NPU = "huawei.com/Ascend910"


def ip_of(name: str) -> str:
    crc = zlib.crc32(name.encode())
    return f"10.{crc % 250}.{crc // 250 % 250}.{crc // 62500 % 250 + 1}"


def node(
    name: str, accel: str | None = None, *, super_pod: int | str | None = None, npu: bool = True
) -> dict:
    labels = {"accelerator-type": accel} if accel else {}
    annotations = {"superPodID": str(super_pod)} if super_pod is not None else {}
    status: dict[str, Any] = {"addresses": [{"type": "InternalIP", "address": ip_of(name)}]}
    if npu:
        status["allocatable"] = {NPU: str(profile_for(accel).chips_per_node)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "status": status,
    }


def cpu_node(name: str) -> dict:
    return node(name, npu=False)


def pod(
    name: str,
    *,
    chips: Sequence[int] | str | None = None,
    request: int | None = None,
    on: str | None = None,
    selector: str | None = None,
    group: str | None = None,
    owner: str | None = None,
    job: str | None = None,
    rank: int | None = None,
    phase: str = "Running",
    ns: str = "default",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict:
    """A pod; `chips` is the allocation (ids, or a raw annotation string); request defaults to len(chips)."""
    if request is None:
        request = len(chips) if isinstance(chips, list | tuple | range) else 0
    notes = dict(annotations or {})
    if isinstance(chips, str):
        notes[NPU] = chips
    elif chips is not None:
        notes[NPU] = ",".join(f"Ascend910-{chip}" for chip in chips)
    if group:
        notes["scheduling.k8s.io/group-name"] = group
    if rank is not None:
        notes["hccl/rankIndex"] = str(rank)
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": dict(labels or {}), "annotations": notes}
    if job:
        meta["labels"]["job-name"] = job
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "mindxdl.gitee.com/v1", "kind": "AscendJob", "name": owner}]
    spec: dict[str, Any] = {
        "containers": [{"name": "ascend", "resources": {"requests": {NPU: str(request)}} if request else {}}]
    }
    if selector:
        spec["nodeSelector"] = {"accelerator-type": selector}
    if on:
        spec["nodeName"] = on
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def job_pods(
    job: str,
    placements: Iterable[tuple[str | None, Sequence[int] | str | None]],
    *,
    selector: str | None = None,
    request: int | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    ns: str = "default",
) -> list[dict]:
    """Pods job-worker-<rank> of one job (PodGroup annotation), one per (node, chips), with ranks."""
    return [
        pod(
            f"{job}-worker-{rank}",
            chips=chips,
            on=on,
            selector=selector,
            group=job,
            rank=rank,
            request=request,
            labels=labels,
            annotations=annotations,
            ns=ns,
        )
        for rank, (on, chips) in enumerate(placements)
    ]


def podgroup(
    name: str,
    min_member: int | None,
    *,
    owner: str | None = None,
    ns: str = "default",
    labels: dict | None = None,
    annotations: dict | None = None,
    npu: int = 0,
) -> dict:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "labels": labels or {},
        "annotations": annotations or {},
    }
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "mindxdl.gitee.com/v1", "kind": "AscendJob", "name": owner}]
    spec: dict[str, Any] = {} if min_member is None else {"minMember": min_member}
    if npu:
        spec["minResources"] = {NPU: str(npu)}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": meta, "spec": spec}


def acjob(
    name: str,
    specs: dict[str, tuple[int, int, str | None]],
    *,
    ns: str = "default",
    labels: dict | None = None,
    annotations: dict | None = None,
    min_available: int | None = None,
    template_annotations: dict | None = None,
) -> dict:
    """AscendJob; specs: replica type -> (replicas, chips per pod, accelerator-type selector)."""
    replica_specs = {}
    for kind, (replicas, chips, selector) in specs.items():
        container: dict[str, Any] = {"name": "ascend"}
        if chips:
            container["resources"] = {"requests": {NPU: str(chips)}, "limits": {NPU: str(chips)}}
        pod_spec: dict[str, Any] = {"containers": [container]}
        if selector:
            pod_spec["nodeSelector"] = {"accelerator-type": selector}
        template: dict[str, Any] = {"spec": pod_spec}
        if template_annotations:
            template["metadata"] = {"annotations": template_annotations}
        replica_specs[kind] = {"replicas": replicas, "template": template}
    spec: dict[str, Any] = {"replicaSpecs": replica_specs}
    if min_available is not None:
        spec["runPolicy"] = {"schedulingPolicy": {"minAvailable": min_available}}
    return {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}, "annotations": annotations or {}},
        "spec": spec,
    }


def device_info(
    node_name: str,
    *,
    unhealthy: Iterable[int] = (),
    network: Iterable[int] = (),
    super_pod: int | None = None,
) -> dict:
    devices = {
        f"{NPU}-Unhealthy": ",".join(f"Ascend910-{c}" for c in unhealthy),
        f"{NPU}-NetworkUnhealthy": ",".join(f"Ascend910-{c}" for c in network),
    }
    info: dict[str, Any] = {"DeviceInfo": {"DeviceList": devices}}
    if super_pod is not None:
        info["SuperPodID"] = super_pod
    return configmap(f"mindx-dl-deviceinfo-{node_name}", "kube-system", {"DeviceInfoCfg": json.dumps(info)})


def tor(tors: dict[int, list[str]]) -> dict:
    """basic-tor-node-cm with ToR id -> node names (matched by the nodes' IPs)."""
    servers = [
        {"tor_id": tor_id, "server": [{"server_ip": ip_of(name)} for name in names]}
        for tor_id, names in tors.items()
    ]
    return configmap(
        "basic-tor-node-cm",
        "kube-system",
        {"tor_info": json.dumps({"version": "1.0", "tor_count": 32, "server_list": servers})},
    )


def rank_table(
    job: str,
    servers: list[tuple[str, Sequence[object], Sequence[object]]],
    *,
    status: str = "completed",
    server_count: object = None,
    ns: str = "default",
) -> dict:
    """rings-config-<job>: servers = (node name, device ids, rank ids)."""
    server_list = [
        {
            "server_id": f"uid-{i}",
            "host_ip": ip_of(name),
            "device": [
                {"device_id": str(d), "device_ip": "192.168.0.1", "rank_id": str(r)}
                for d, r in zip(devs, ranks, strict=True)
            ],
        }
        for i, (name, devs, ranks) in enumerate(servers)
    ]
    table = {
        "status": status,
        "server_list": server_list,
        "version": "1.0",
        "server_count": str(len(servers)) if server_count is None else server_count,
    }
    return configmap(f"rings-config-{job}", ns, {"hccl.json": json.dumps(table)})


def configmap(name: str, ns: str, data: dict[str, str]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }


def run(objects: Iterable[dict], **options: Any) -> Report:
    return validate(list(objects), **options)


def codes(objects: Iterable[dict], **options: Any) -> list[str]:
    """Sorted violation codes of a validation: the exact multiset a case expects."""
    return sorted(violation.code.value for violation in run(objects, **options).violations)
