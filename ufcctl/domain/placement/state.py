"""Assemble parsed objects into jobs and chip holdings: job identity, job settings, allocations."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping

from ufcctl.domain.placement import keys
from ufcctl.domain.placement.configmaps import chip_id
from ufcctl.domain.placement.model import (
    AscendJob,
    ClusterState,
    Holding,
    Job,
    Node,
    Pod,
    PodGroup,
    ReplicaSpec,
    Request,
)
from ufcctl.domain.placement.parse import ParsedObjects
from ufcctl.domain.placement.profiles import HardwareProfile, UnknownProfileError, profile_for
from ufcctl.domain.placement.reader import ParseError
from ufcctl.errors import shown

JobKey = tuple[str, str]
_HARDWARE_HINT = (
    "the rules know only the accelerator-types of the placement contract; a new type is one "
    "HardwareProfile in ufcctl/domain/placement/profiles.py"
)


def build_state(parsed: ParsedObjects) -> ClusterState:
    health = {entry.node: entry for entry in parsed.health}
    nodes = {node.name: _with_super_pod(node, health) for node in parsed.nodes}
    ascend_jobs = {(job.namespace, job.name): job for job in parsed.ascend_jobs}
    pod_groups: dict[JobKey, PodGroup] = {}
    groups_by_name = {(group.namespace, group.name): group for group in parsed.pod_groups}
    for group in sorted(parsed.pod_groups, key=lambda g: g.ref):
        pod_groups.setdefault((group.namespace, group.owner_ascend_job or group.name), group)

    members: dict[JobKey, list[Pod]] = {}
    standalone: list[Pod] = []
    for pod in parsed.pods:
        key = _job_key(pod, groups_by_name)
        if key is None:
            if pod.request > 0:
                standalone.append(pod)
        else:
            members.setdefault(key, []).append(pod)

    jobs: list[Job] = []
    for key in sorted(members.keys() | ascend_jobs.keys() | pod_groups.keys()):
        pods = sorted(members.get(key, ()), key=_by_ref)
        ascend_job, pod_group = ascend_jobs.get(key), pod_groups.get(key)
        if _is_npu_job(pods, ascend_job, pod_group):
            jobs.append(_job(key[0], key[1], ascend_job, pod_group, pods, nodes))
    for pod in sorted(standalone, key=_by_ref):
        jobs.append(_job(pod.namespace, None, None, None, [pod], nodes))
    return ClusterState(
        nodes=nodes,
        jobs=tuple(jobs),
        health=health,
        tor=parsed.tor,
        rank_tables=parsed.rank_tables,
        pods_checked=sum(len(job.pods) for job in jobs),
    )


def _by_ref(pod: Pod) -> str:
    return pod.ref


def _with_super_pod(node: Node, health: Mapping) -> Node:
    """The node annotation superPodID wins; the device-info ConfigMap's SuperPodID fills a gap."""
    entry = health.get(node.name)
    if node.super_pod_id is None and entry is not None and entry.super_pod_id is not None:
        return dataclasses.replace(node, super_pod_id=entry.super_pod_id)
    return node


def _job_key(pod: Pod, groups: Mapping[JobKey, PodGroup]) -> JobKey | None:
    """Contract order: PodGroup annotation, else AscendJob owner, else label job-name.

    A PodGroup owned by an AscendJob stands for that AscendJob, so both routes meet in one job.
    """
    if pod.group_name:
        group = groups.get((pod.namespace, pod.group_name))
        return (pod.namespace, group.owner_ascend_job if group and group.owner_ascend_job else pod.group_name)
    if pod.owner_ascend_job:
        return (pod.namespace, pod.owner_ascend_job)
    if pod.job_name_label:
        return (pod.namespace, pod.job_name_label)
    return None


def _is_npu_job(pods: list[Pod], ascend_job: AscendJob | None, pod_group: PodGroup | None) -> bool:
    return (
        any(pod.request > 0 for pod in pods)
        or (ascend_job is not None and any(spec.request > 0 for spec in ascend_job.replica_specs))
        or (pod_group is not None and pod_group.npu_min_resources > 0)
    )


def _job(
    namespace: str,
    name: str | None,
    ascend_job: AscendJob | None,
    pod_group: PodGroup | None,
    pods: list[Pod],
    nodes: Mapping[str, Node],
) -> Job:
    npu_pods = [pod for pod in pods if pod.request > 0]
    npu_specs = [spec for spec in ascend_job.replica_specs if spec.request > 0] if ascend_job else []
    # The job's own numbers win (contract): an AscendJob's replicas, else the pods in the input,
    # counting only live pods so that a failed-and-replaced pod does not look like a second one.
    if npu_specs:
        npu_pod_count = sum(spec.replicas for spec in npu_specs)
        total_chips = sum(spec.replicas * spec.request for spec in npu_specs)
    else:
        counted = [pod for pod in npu_pods if pod.active] or npu_pods
        npu_pod_count = len(counted)
        total_chips = sum(pod.request for pod in counted)
    if npu_pods:
        requests = tuple(Request(pod, None, pod.request) for pod in npu_pods)
    else:
        requests = tuple(Request(None, spec.name, spec.request) for spec in npu_specs)
    selector = _first(spec.selector for spec in npu_specs) or _first(pod.selector for pod in npu_pods)
    sources = _setting_sources(ascend_job, pod_group, npu_specs, pods)
    ref = f"{namespace}/{name}" if name is not None else None
    job = Job(
        namespace=namespace,
        name=name,
        ascend_job=ascend_job,
        pod_group=pod_group,
        pods=tuple(pods),
        selector=selector,
        profile=_job_profile(selector, ascend_job, npu_pods, ref),
        npu_pod_count=npu_pod_count,
        total_chips=total_chips,
        min_member=_min_member(ascend_job, pod_group),
        requests=requests,
        tor_affinity=_setting(sources, 0, keys.TOR_AFFINITY_LABEL),
        sp_block=_setting(sources, 1, keys.SP_BLOCK_ANNOTATION),
    )
    if not nodes:
        return job  # no cluster in the input: placement rules do not run
    holdings = tuple(_holding(pod, ref, nodes) for pod in npu_pods if pod.placed)
    return dataclasses.replace(job, holdings=holdings)


def _first(values: Iterable[str | None]) -> str | None:
    return next((value for value in values if value), None)


def _setting_sources(
    ascend_job: AscendJob | None, pod_group: PodGroup | None, specs: list[ReplicaSpec], pods: list[Pod]
) -> list[tuple[Mapping, Mapping]]:
    """(labels, annotations) in precedence order: the job objects first, then templates, then pods."""
    sources = [(obj.labels, obj.annotations) for obj in (ascend_job, pod_group) if obj is not None]
    sources += [(spec.labels, spec.annotations) for spec in specs]
    sources += [(pod.labels, pod.annotations) for pod in pods]
    return sources


def _setting(sources: list[tuple[Mapping, Mapping]], which: int, key: str) -> str | None:
    for pair in sources:
        value = pair[which].get(key)
        if value is not None:
            return str(value)
    return None


def _job_profile(
    selector: str | None, ascend_job: AscendJob | None, npu_pods: list[Pod], ref: str | None
) -> HardwareProfile:
    try:
        return profile_for(selector)
    except UnknownProfileError as err:
        origin = ascend_job or (npu_pods[0] if npu_pods else None)
        subject = (
            f"AscendJob {origin.ref}"
            if isinstance(origin, AscendJob)
            else f"Pod {origin.ref if origin else ref}"
        )
        raise ParseError(
            subject, f"nodeSelector {err}", origin.source if origin else None, _HARDWARE_HINT
        ) from None


def _min_member(ascend_job: AscendJob | None, pod_group: PodGroup | None) -> int | None:
    if pod_group is not None and pod_group.min_member is not None:
        return pod_group.min_member
    if ascend_job is not None:
        # ascend-operator job.go newPodGroupSpec: minAvailable if set, else total replicas.
        return ascend_job.min_available if ascend_job.min_available is not None else ascend_job.total_replicas
    return None


def _holding(pod: Pod, job_ref: str | None, nodes: Mapping[str, Node]) -> Holding:
    node_name = pod.node_name or ""  # placed pods always have one
    node = nodes.get(node_name)
    if node is not None and node.profile is None:
        raise ParseError(
            f"Node {node.name}",
            f"label accelerator-type {shown(node.accelerator_type)} names no known hardware profile, "
            f"and NPU pod {pod.ref} runs on it",
            node.source,
            _HARDWARE_HINT,
        )
    profile = node.profile if node is not None else None
    limit = profile.chips_per_node if profile is not None else None
    chips, bad, duplicates = parse_allocation(pod.allocation or "", limit)
    return Holding(pod, job_ref, node_name, node, profile, chips, bad, duplicates, pod.allocation is not None)


# A cluster repeats a few thousand distinct allocation strings over 100,000 pods ("Ascend910-0,...,-7").
@functools.lru_cache(maxsize=65536)
def parse_allocation(raw: str, limit: int | None) -> tuple[tuple[int, ...], tuple[str, ...], tuple[int, ...]]:
    """Split "Ascend910-0,Ascend910-1" into valid distinct ids, bad entries and repeated ids.

    `limit` is the node's chips/node; an id at or above it is a bad entry (CHIP_MISSING).
    """
    if not raw.strip():
        return (), (), ()
    chips: list[int] = []
    bad: list[str] = []
    duplicates: list[int] = []
    for entry in raw.split(","):
        entry = entry.strip()
        chip = chip_id(entry)
        if chip is None or (limit is not None and chip >= limit):
            bad.append(entry)
        elif chip in chips:
            duplicates.append(chip)
        else:
            chips.append(chip)
    return tuple(chips), tuple(bad), tuple(duplicates)
