"""The snapshot the rules read: nodes, pods, jobs, chip holdings, device health, ToR map, rank tables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ufcctl.domain.placement.profiles import DEFAULT_ACCELERATOR_TYPE, HardwareProfile


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    accelerator_type: str | None  # the raw label; None when the node has none
    super_pod_id: int | None  # annotation superPodID (else device-info SuperPodID); None = absent
    ip: str | None  # status.addresses InternalIP
    npu_capacity: int  # status.capacity/allocatable huawei.com/Ascend910; 0 = not reported
    profile: HardwareProfile | None  # None when the label names no registered profile
    source: str | None = None

    @property
    def hardware_type(self) -> str:
        return self.accelerator_type or DEFAULT_ACCELERATOR_TYPE

    @property
    def is_npu_node(self) -> bool:
        # A CPU-only node (no label, no Ascend910 capacity) cannot host an NPU pod at all.
        return self.accelerator_type is not None or self.npu_capacity > 0


@dataclass(frozen=True, slots=True)
class Pod:
    namespace: str
    name: str
    ref: str  # "namespace/name"
    uid: str | None
    node_name: str | None
    placed: bool  # nodeName set and phase not Succeeded/Failed
    active: bool  # phase not Succeeded/Failed
    request: int  # sum of huawei.com/Ascend910 requests over containers
    selector: str | None  # spec.nodeSelector accelerator-type
    allocation: str | None  # annotation huawei.com/Ascend910, raw
    rank_index: int | None
    group_name: str | None
    owner_ascend_job: str | None
    job_name_label: str | None
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    source: str | None = None


@dataclass(frozen=True, slots=True)
class ReplicaSpec:
    """One `spec.replicaSpecs.<type>` of an AscendJob: its pod template, reduced to what rules need."""

    name: str
    replicas: int
    request: int
    selector: str | None
    labels: Mapping[str, str]
    annotations: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class AscendJob:
    namespace: str
    name: str
    ref: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    min_available: int | None
    replica_specs: tuple[ReplicaSpec, ...]
    source: str | None = None

    @property
    def total_replicas(self) -> int:
        return sum(spec.replicas for spec in self.replica_specs)


@dataclass(frozen=True, slots=True)
class PodGroup:
    namespace: str
    name: str
    ref: str
    min_member: int | None
    owner_ascend_job: str | None
    npu_min_resources: int  # spec.minResources huawei.com/Ascend910
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    source: str | None = None


@dataclass(frozen=True, slots=True)
class DeviceHealth:
    """ConfigMap kube-system/mindx-dl-deviceinfo-<node>: chips the device plugin reports as bad."""

    node: str
    unhealthy: frozenset[int]
    network_unhealthy: frozenset[int]
    super_pod_id: int | None


@dataclass(frozen=True, slots=True)
class TorMap:
    """ConfigMap kube-system/basic-tor-node-cm: which ToR switch each server IP hangs under."""

    tor_by_ip: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class RankDevice:
    device_id: object  # raw: rules judge whether it is an integer
    rank_id: object


@dataclass(frozen=True, slots=True)
class RankServer:
    server_id: object
    host_ip: object
    devices: tuple[RankDevice, ...]


@dataclass(frozen=True, slots=True)
class RankTable:
    """ConfigMap <ns>/rings-config-<job>, key hccl.json, as the Ascend Operator writes it."""

    namespace: str
    job: str
    ref: str  # the ConfigMap, "namespace/name"
    status: object
    server_count: object
    servers: tuple[RankServer, ...]


@dataclass(frozen=True, slots=True)
class Request:
    """A chip request of a job: one pod, or one replica template when no pod of the job is in the input."""

    pod: Pod | None
    replica: str | None
    chips: int

    @property
    def subject(self) -> str:
        return f"pod {self.pod.ref}" if self.pod else f"replica {self.replica}"


@dataclass(frozen=True, slots=True)
class Holding:
    """The chips a placed NPU pod holds on its node, parsed once for every placement rule."""

    pod: Pod
    job_ref: str | None
    node_name: str
    node: Node | None  # None: the pod's node is absent from the input
    profile: HardwareProfile | None  # the node's; None exactly when the node is absent
    chips: tuple[int, ...]  # distinct, parseable, in range for the node's profile
    bad_entries: tuple[str, ...]  # unparseable entries or ids out of range
    duplicates: tuple[int, ...]  # ids listed more than once
    annotated: bool  # the allocation annotation is present

    @property
    def held(self) -> int:
        """Entries the allocation names, a repeated id counted once (contract: bad entries still count)."""
        return len(self.chips) + len(self.bad_entries)

    @property
    def clean(self) -> bool:
        """Known node and every entry a distinct valid chip: topology rules judge only such holdings."""
        return self.node is not None and not self.bad_entries and not self.duplicates


@dataclass(frozen=True, slots=True)
class Job:
    """An NPU job: AscendJob and/or PodGroup and its pods, or a standalone NPU pod (name None)."""

    namespace: str
    name: str | None
    ascend_job: AscendJob | None
    pod_group: PodGroup | None
    pods: tuple[Pod, ...]
    selector: str | None
    profile: HardwareProfile
    npu_pod_count: int
    total_chips: int
    min_member: int | None
    requests: tuple[Request, ...]
    tor_affinity: str | None
    sp_block: str | None
    holdings: tuple[Holding, ...] = field(default=())

    @property
    def ref(self) -> str | None:
        return f"{self.namespace}/{self.name}" if self.name is not None else None

    @property
    def multi_pod(self) -> bool:
        return self.npu_pod_count > 1


@dataclass(frozen=True, slots=True)
class ClusterState:
    nodes: Mapping[str, Node]
    jobs: tuple[Job, ...]
    health: Mapping[str, DeviceHealth]
    tor: TorMap | None
    rank_tables: tuple[RankTable, ...]
    pods_checked: int

    @property
    def has_nodes(self) -> bool:
        return bool(self.nodes)
