"""Placement rules about shape: HCCS rings, chip pairs, nodes per job, gangs and SuperPoDs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from ufcctl.domain.placement.model import ClusterState, Holding, Job
from ufcctl.domain.placement.rules.base import Options, chip_list, positive_int
from ufcctl.domain.placement.violations import Code, Violation


def _violation(code: Code, holding: Holding, message: str) -> Violation:
    return Violation(code, holding.job_ref, holding.pod.ref, holding.node_name, message)


def check_hccs_ring(state: ClusterState, options: Options) -> Iterator[Violation]:
    """Module/half: <= one ring's worth inside one ring, more = the whole node; 910b-16: <= 8 in one ring."""
    for job in state.jobs:
        for holding in job.holdings:
            if not holding.clean:
                continue
            profile = holding.profile
            if profile is None or profile.ring_size is None:
                continue
            ring = profile.ring_size
            held = len(holding.chips)
            if held <= ring:
                rings = {profile.ring_of(chip) for chip in holding.chips}
                if len(rings) > 1:
                    yield _violation(
                        Code.HCCS_RING,
                        holding,
                        f"{held} chip(s) {chip_list(holding.chips)} span HCCS rings "
                        f"{', '.join(_ring_names(sorted(rings), ring))}; {held} chip(s) must sit in one ring",
                    )
            elif not profile.balanced_cross_ring and held != profile.chips_per_node:
                yield _violation(
                    Code.HCCS_RING,
                    holding,
                    f"{held} chips {chip_list(holding.chips)} exceed one HCCS ring of {ring} but are "
                    f"not the whole {profile.chips_per_node}-chip node",
                )


def _ring_names(rings: list[int], size: int) -> list[str]:
    return [f"{{{index * size}-{index * size + size - 1}}}" for index in rings]


def check_ring_balance(state: ClusterState, options: Options) -> Iterator[Violation]:
    """module-910b-16, 9-15 chips: equal chips per ring; a single-pod job also mirrors ring 0 in ring 1."""
    for job in state.jobs:
        for holding in job.holdings:
            if not holding.clean:
                continue
            profile = holding.profile
            if profile is None or not profile.balanced_cross_ring or profile.ring_size is None:
                continue
            ring = profile.ring_size
            held = len(holding.chips)
            if not ring < held < profile.chips_per_node:
                continue
            low = sorted(chip for chip in holding.chips if profile.ring_of(chip) == 0)
            high = sorted(chip for chip in holding.chips if profile.ring_of(chip) == 1)
            if len(low) != len(high):
                yield _violation(
                    Code.RING_BALANCE,
                    holding,
                    f"{held} chips split {len(low)}/{len(high)} across the two HCCS rings; "
                    f"they must split evenly",
                )
            elif not job.multi_pod and [chip + ring for chip in low] != high:
                yield _violation(
                    Code.RING_BALANCE,
                    holding,
                    f"single-pod job: ring-1 chips {chip_list(high)} must be ring-0 chips "
                    f"{chip_list(low)} + {ring}",
                )


def check_chip_pair(state: ClusterState, options: Options) -> Iterator[Violation]:
    """A3: a multi-chip pod takes whole pairs {2k, 2k+1} (ascend910a3 base.go: card = id / 2)."""
    for job in state.jobs:
        for holding in job.holdings:
            if not holding.clean or len(holding.chips) < 2:
                continue
            size = holding.profile.pair_size if holding.profile is not None else None
            if size is None:
                continue
            per_pair = Counter(chip // size for chip in holding.chips)
            halves = sorted(pair for pair, held in per_pair.items() if held != size)
            if halves:
                broken = ", ".join(f"{{{pair * size}-{pair * size + size - 1}}}" for pair in halves)
                yield _violation(
                    Code.CHIP_PAIR,
                    holding,
                    f"chips {chip_list(holding.chips)} hold part of pair(s) {broken}; "
                    f"multi-chip pods take whole pairs",
                )


def check_node_shared(state: ClusterState, options: Options) -> Iterator[Violation]:
    for job in state.jobs:
        if not (job.profile.one_pod_per_node and job.multi_pod):
            continue
        first_on: dict[str, str] = {}
        for holding in job.holdings:
            node = holding.node_name
            other = first_on.setdefault(node, holding.pod.ref)
            if other != holding.pod.ref:
                yield _violation(
                    Code.NODE_SHARED,
                    holding,
                    f"node {node} also runs NPU pod {other} of this job; {job.profile.accelerator_type} "
                    f"allows one NPU pod per node in a multi-pod job",
                )


def check_gang_incomplete(state: ClusterState, options: Options) -> Iterator[Violation]:
    for job in state.jobs:
        if job.min_member is None:
            continue
        placed = sum(1 for pod in job.pods if pod.placed)
        if 0 < placed < job.min_member:
            origin = (
                "PodGroup minMember"
                if job.pod_group and job.pod_group.min_member is not None
                else (
                    "AscendJob minAvailable"
                    if job.ascend_job and job.ascend_job.min_available is not None
                    else "total replicas"
                )
            )
            yield Violation(
                Code.GANG_INCOMPLETE,
                job.ref,
                None,
                None,
                f"{placed} pod(s) placed, fewer than {origin} {job.min_member}: "
                f"a partial gang holds chips and cannot run",
            )


def check_superpod_split(state: ClusterState, options: Options) -> Iterator[Violation]:
    for job in state.jobs:
        if job.profile.super_pod:
            yield from _superpod_split(job)


def _superpod_split(job: Job) -> Iterator[Violation]:
    """Logical SuperPoD of rank r = r // (sp-block / chips-per-node) (ascend-operator utils/superpod.go)."""
    block = positive_int(job.sp_block)
    nodes_per_block = max(1, block // job.profile.chips_per_node) if block else None
    groups: dict[int, list[tuple[Holding, int]]] = {}
    for holding in job.holdings:
        node = holding.node
        if node is None:
            continue
        physical = node.super_pod_id
        if physical is None or physical < 0:
            known = "absent" if physical is None else f"{physical} (unknown)"
            yield _violation(
                Code.SUPERPOD_SPLIT,
                holding,
                f"SuperPoD job's pod runs on node {node.name} whose super pod id is {known}",
            )
        elif nodes_per_block is not None and holding.pod.rank_index is not None:
            groups.setdefault(holding.pod.rank_index // nodes_per_block, []).append((holding, physical))
    for logical, members in sorted(groups.items()):
        spread = Counter(physical for _, physical in members)
        if len(spread) < 2:
            continue
        # The physical SuperPoD most of the group sits in is the reference; ties go to the lowest id.
        home = min(spread, key=lambda physical: (-spread[physical], physical))
        layout = ", ".join(f"{physical}: {count} pod(s)" for physical, count in sorted(spread.items()))
        for holding, physical in members:
            if physical != home:
                yield _violation(
                    Code.SUPERPOD_SPLIT,
                    holding,
                    f"logical SuperPoD {logical} spans physical SuperPoDs ({layout}); "
                    f"this pod is in {physical}",
                )
