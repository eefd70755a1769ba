"""Request-level rules: what a job asks for, judged with or without a placement."""

from __future__ import annotations

from collections.abc import Iterator

from ufcctl.domain.placement.model import ClusterState, Job, Request
from ufcctl.domain.placement.profiles import DEFAULT_ACCELERATOR_TYPE
from ufcctl.domain.placement.rules.base import Options, counts, positive_int
from ufcctl.domain.placement.violations import Code, Violation
from ufcctl.errors import shown

# ascend-for-volcano internal/nslb/frame.go ValidNPUJob: the only accepted label values.
TOR_AFFINITY_VALUES = ("large-model-schema", "normal-schema", "null")


def _violation(code: Code, job: Job, request: Request | None, message: str) -> Violation:
    pod = request.pod if request else None
    node = pod.node_name if pod is not None and pod.placed else None
    return Violation(code, job.ref, pod.ref if pod else None, node, message)


def check_chip_count(state: ClusterState, options: Options) -> Iterator[Violation]:
    for job in state.jobs:
        profile = job.profile
        if profile.super_pod:  # SuperPoD counts are SP_BLOCK's to judge (contract, Clarifications)
            continue
        allowed = profile.allowed_counts(job.multi_pod)
        for request in job.requests:
            if request.chips not in allowed:
                shape = "multi-pod" if job.multi_pod else "single-pod"
                yield _violation(
                    Code.CHIP_COUNT,
                    job,
                    request,
                    f"{request.subject} requests {request.chips} chips; {profile.accelerator_type} allows "
                    f"{counts(allowed)} per pod in a {shape} job",
                )


def check_selector_missing(state: ClusterState, options: Options) -> Iterator[Violation]:
    npu_types = {node.hardware_type for node in state.nodes.values() if node.is_npu_node}
    cluster_has_no_module = bool(npu_types) and DEFAULT_ACCELERATOR_TYPE not in npu_types
    for job in state.jobs:
        if job.selector:
            continue
        placed = [pod for pod in job.pods if pod.placed and pod.request > 0]
        if placed:
            on_nodes = [(pod, state.nodes.get(pod.node_name or "")) for pod in placed]
            offenders = [
                (pod, node)
                for pod, node in on_nodes
                if node is not None and node.hardware_type != DEFAULT_ACCELERATOR_TYPE
            ]
            if offenders:
                pod, node = offenders[0]
                types = ", ".join(sorted({node.hardware_type for _, node in offenders}))
                yield Violation(
                    Code.SELECTOR_MISSING,
                    job.ref,
                    pod.ref,
                    node.name,
                    f"job has no accelerator-type nodeSelector but {len(offenders)} NPU pod(s) run on "
                    f"{types} "
                    f"nodes; the scheduler judges it with 910 `module` rules",
                )
        elif cluster_has_no_module and _not_yet_scheduled(job):
            yield Violation(
                Code.SELECTOR_MISSING,
                job.ref,
                None,
                None,
                f"job has no accelerator-type nodeSelector and the cluster's NPU nodes are all "
                f"{', '.join(sorted(npu_types))}; the scheduler would judge it with 910 `module` rules",
            )


def _not_yet_scheduled(job: Job) -> bool:
    """No NPU pod was ever bound and the job is not over: where it would land is still open."""
    npu_pods = [pod for pod in job.pods if pod.request > 0]
    return not any(pod.node_name for pod in npu_pods) and (
        not npu_pods or any(pod.active for pod in npu_pods)
    )


def check_sp_block(state: ClusterState, options: Options) -> Iterator[Violation]:
    for job in state.jobs:
        if job.profile.super_pod:
            yield from _sp_block(job, options.super_pod_size)


def _sp_block(job: Job, super_pod_size: int) -> Iterator[Violation]:
    """ascend-for-volcano ascend910a3/superpod/frame.go checkSpBlock/checkRequireNPU, per the contract."""
    chips = job.profile.chips_per_node
    block = positive_int(job.sp_block)
    if block is None:
        state = "missing" if job.sp_block is None else f"{shown(job.sp_block)}, not a positive integer"
        yield _violation(Code.SP_BLOCK, job, None, f"SuperPoD job needs annotation sp-block; it is {state}")
    if job.multi_pod:
        for request in job.requests:
            if request.chips != chips:
                yield _violation(
                    Code.SP_BLOCK,
                    job,
                    request,
                    f"{request.subject} requests {request.chips} chips; every NPU pod of a multi-pod "
                    f"SuperPoD job must request the whole node ({chips})",
                )
        if block is not None:
            yield from _block_fits(job, block, chips, super_pod_size)
            if job.total_chips % block:
                yield _violation(
                    Code.SP_BLOCK,
                    job,
                    None,
                    f"the job's {job.total_chips} chips are not a multiple of sp-block {block}",
                )
        return
    for request in job.requests:
        if request.chips != 1 and (request.chips % 2 or request.chips > chips):
            yield _violation(
                Code.SP_BLOCK,
                job,
                request,
                f"{request.subject} requests {request.chips} chips; a single-pod SuperPoD job takes 1 "
                f"or an even number up to {chips}",
            )
        if block is not None and block < chips and block != request.chips:
            yield _violation(
                Code.SP_BLOCK,
                job,
                request,
                f"sp-block {block} is below the node's {chips} chips, so it must equal the request "
                f"({request.chips})",
            )
    if block is not None and block >= chips:
        yield from _block_fits(job, block, chips, super_pod_size)


def _block_fits(job: Job, block: int, chips: int, super_pod_size: int) -> Iterator[Violation]:
    if block % chips:
        yield _violation(
            Code.SP_BLOCK, job, None, f"sp-block {block} is not a multiple of {chips} chips/node"
        )
    if block > chips * super_pod_size:
        yield _violation(
            Code.SP_BLOCK,
            job,
            None,
            f"sp-block {block} needs {block / chips:g} nodes per logical SuperPoD; a SuperPoD has "
            f"{super_pod_size} (--super-pod-size)",
        )


def check_tor_label(state: ClusterState, options: Options) -> Iterator[Violation]:
    for job in state.jobs:
        if job.tor_affinity is not None and job.tor_affinity not in TOR_AFFINITY_VALUES:
            yield _violation(
                Code.TOR_LABEL,
                job,
                None,
                f"label tor-affinity={shown(job.tor_affinity)}; allowed: {', '.join(TOR_AFFINITY_VALUES)}",
            )
