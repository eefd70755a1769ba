"""The test allocator itself: shapes the property tests found by chance, pinned as fixed cases.

Each case is one cluster (nodes with their ToR and super pod id) and a job; it states where the
allocator must put the job's pods (node names in rank order, or None when nothing fits under the
contract), and the validator must find nothing wrong with the result.
"""

from __future__ import annotations

import pytest
from allocator import Allocator, JobSpec, SimNode, cluster_objects, job_objects

from ufcctl.domain.placement import validate
from ufcctl.domain.placement.profiles import profile_for

SP16 = "module-a3-16-super-pod"
SP8 = "module-a3-8-super-pod"
B8 = "module-910b-8"


def nodes(accel: str, layout: list[tuple[int, int]]) -> list[SimNode]:
    """One node per (ToR, super pod id), named <accel>-<index>."""
    return [
        SimNode(name=f"{accel}-{i}", ip=f"10.9.0.{i + 1}", accelerator_type=accel, tor=tor, super_pod_id=sp)
        for i, (tor, sp) in enumerate(layout)
    ]


def job(
    accel: str, pods: int, *, sp_nodes: int | None = None, tor: str | None = "large-model-schema"
) -> JobSpec:
    """Whole-node pods; sp_nodes = nodes per logical SuperPoD (sp-block / chips per node)."""
    chips = profile_for(accel).chips_per_node
    sp_block = sp_nodes * chips if sp_nodes is not None else None
    return JobSpec("job-0", accel, pods, chips, sp_block=sp_block, tor_affinity=tor)


PLACEMENT_CASES = [
    # The counterexample hypothesis found: a 2-pod SuperPoD filler job on two nodes of one SuperPoD
    # under two ToRs. The allocator placed it across both (TOR_SPAN); no ToR holds two nodes.
    pytest.param(
        nodes(SP16, [(0, 0), (1, 0)]), job(SP16, 2, sp_nodes=1), None, id="sp16-filler-2-pods-two-tors-no-fit"
    ),
    pytest.param(
        nodes(SP16, [(0, 0), (1, 0), (0, 0), (1, 0)]),
        job(SP16, 2, sp_nodes=1),
        [f"{SP16}-0", f"{SP16}-2"],
        id="sp16-filler-2-pods-skips-other-tor",
    ),
    pytest.param(
        nodes(SP16, [(0, 0), (1, 0), (1, 0)]),
        job(SP16, 2, sp_nodes=1),
        [f"{SP16}-1", f"{SP16}-2"],
        id="sp16-filler-2-pods-second-tor",
    ),
    pytest.param(
        nodes(SP8, [(0, 0), (1, 0), (0, 1), (1, 1), (0, 1)]),
        job(SP8, 3, sp_nodes=1),
        [f"{SP8}-0", f"{SP8}-2", f"{SP8}-4"],
        id="sp8-filler-3-pods-one-tor-blocks-in-different-superpods",
    ),
    # One logical SuperPoD of 2 nodes: one ToR and one physical SuperPoD at once, which no pair offers.
    pytest.param(
        nodes(SP16, [(0, 0), (1, 0), (0, 1), (1, 1)]),
        job(SP16, 2, sp_nodes=2),
        None,
        id="sp16-filler-block-2-no-fit",
    ),
    pytest.param(
        nodes(SP16, [(0, 0), (1, 0), (0, 1), (1, 1), (1, 1)]),
        job(SP16, 2, sp_nodes=2),
        [f"{SP16}-3", f"{SP16}-4"],
        id="sp16-filler-block-2-tor-and-superpod",
    ),
    # Not fillers: 4 pods, or another schema, may span ToRs.
    pytest.param(
        nodes(SP16, [(0, 0), (1, 0), (0, 0), (1, 0)]),
        job(SP16, 4, sp_nodes=1),
        [f"{SP16}-{i}" for i in range(4)],
        id="sp16-large-model-4-pods-spans",
    ),
    pytest.param(
        nodes(SP16, [(0, 0), (1, 0)]),
        job(SP16, 2, sp_nodes=1, tor="normal-schema"),
        [f"{SP16}-0", f"{SP16}-1"],
        id="sp16-normal-schema-spans",
    ),
    pytest.param(
        nodes(B8, [(0, 0), (1, 0), (0, 0)]), job(B8, 2), [f"{B8}-0", f"{B8}-2"], id="910b-filler-one-tor"
    ),
]


@pytest.mark.parametrize(("cluster", "spec", "expected"), PLACEMENT_CASES)
def test_allocator_places_filler_jobs_under_one_tor(
    cluster: list[SimNode], spec: JobSpec, expected: list[str] | None
) -> None:
    placed = Allocator(cluster).place(spec)
    assert (None if placed is None else [node.name for node, _ in placed]) == expected
    report = validate(cluster_objects(cluster) + job_objects(spec, placed))
    assert [v.to_dict() for v in report.violations] == []
