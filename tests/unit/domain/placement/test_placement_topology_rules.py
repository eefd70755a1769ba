"""Topology rules: HCCS_RING, RING_BALANCE, CHIP_PAIR, NODE_SHARED, GANG_INCOMPLETE, SUPERPOD_SPLIT."""

from __future__ import annotations

import pytest
from placement_kube import acjob, codes, device_info, job_pods, node, pod, podgroup, run

B16 = "module-910b-16"
A3 = "module-a3-16"
SP16 = "module-a3-16-super-pod"
SP8 = "module-a3-8-super-pod"


def one(accel: str | None, chips: list[int], selector: str | None = "same", **pod_args) -> list[dict]:
    selector = accel if selector == "same" else selector
    return [
        node("n1", accel, super_pod=0),
        pod("p", chips=chips, on="n1", job="j", selector=selector, **pod_args),
    ]


def two_pods(accel: str, chips: list[list[int]]) -> list[dict]:
    """A multi-pod job whose pods sit on separate nodes of one type."""
    nodes = [node(f"n{i}", accel) for i in range(len(chips))]
    return [*nodes, *job_pods("j", [(f"n{i}", c) for i, c in enumerate(chips)], selector=accel)]


HCCS_RING_CASES = [
    pytest.param(one("module", [0, 1, 2, 3]), [], id="module-4-in-ring-0"),
    pytest.param(one("module", [4, 5]), [], id="module-2-in-ring-1"),
    pytest.param(one("module", [3, 4]), ["HCCS_RING"], id="module-2-across-rings"),
    pytest.param(one("module", [2, 3, 4, 5]), ["HCCS_RING"], id="module-4-across-rings"),
    pytest.param(one(None, [0, 7], selector=None), ["HCCS_RING"], id="unlabeled-node-is-module"),
    pytest.param(one("module", list(range(8))), [], id="module-8-whole-node"),
    pytest.param(
        one("module", [0, 1, 2, 3, 4, 5], request=6),
        ["CHIP_COUNT", "HCCS_RING"],
        id="module-6-not-whole-node",
    ),
    pytest.param(one("half", [0, 1, 2, 3]), [], id="half-4-one-ring"),
    pytest.param(one("half", [1, 2]), [], id="half-2-one-ring"),
    pytest.param(one(B16, [8, 9, 10, 11, 12, 13, 14, 15]), [], id="910b16-8-in-ring-1"),
    pytest.param(one(B16, [6, 7, 8, 9]), ["HCCS_RING"], id="910b16-4-across-rings"),
    pytest.param(one(B16, list(range(16))), [], id="910b16-16-whole-node"),
    pytest.param(one("module-910b-8", [0, 7]), [], id="910b8-full-mesh-no-ring"),
    pytest.param(one("card", [0, 1]), [], id="card-no-ring"),
    pytest.param(one(A3, [2, 3, 4, 5]), [], id="a3-no-ring"),
]


@pytest.mark.parametrize(("objects", "expected"), HCCS_RING_CASES)
def test_hccs_ring(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


RING_BALANCE_CASES = [
    pytest.param(one(B16, [0, 1, 2, 3, 4, 8, 9, 10, 11, 12]), [], id="single-10-mirrored"),
    pytest.param(one(B16, [0, 1, 2, 3, 4, 5, 8, 9, 10, 11]), ["RING_BALANCE"], id="single-10-split-6-4"),
    pytest.param(
        one(B16, [0, 1, 2, 3, 4, 9, 10, 11, 12, 13]), ["RING_BALANCE"], id="single-10-even-not-mirrored"
    ),
    pytest.param(one(B16, [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14]), [], id="single-14-mirrored"),
    pytest.param(
        two_pods(B16, [[0, 1, 2, 3, 4, 9, 10, 11, 12, 13], [0, 1, 2, 3, 4, 8, 9, 10, 11, 12]]),
        [],
        id="multi-10-balanced-not-mirrored-ok",
    ),
    pytest.param(
        two_pods(B16, [[0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12], [0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13]]),
        ["RING_BALANCE"],
        id="multi-12-split-7-5",
    ),
    pytest.param(
        one(B16, [0, 1, 2, 3, 4, 8, 9, 10, 11], request=9),
        ["CHIP_COUNT", "RING_BALANCE"],
        id="single-9-cannot-balance",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), RING_BALANCE_CASES)
def test_ring_balance(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


SP_NOTES = {"sp-block": "16"}
CHIP_PAIR_CASES = [
    pytest.param(one(A3, [0, 1, 2, 3]), [], id="a3-two-whole-pairs"),
    pytest.param(one(A3, [1, 2]), ["CHIP_PAIR"], id="a3-two-halves"),
    pytest.param(one(A3, [5]), [], id="a3-single-chip-may-split-a-pair"),
    pytest.param(one(A3, [0, 1, 2, 3, 4, 6]), ["CHIP_PAIR"], id="a3-6-with-broken-pair"),
    pytest.param(one(SP16, list(range(16)), rank=0, annotations=SP_NOTES), [], id="sp16-whole-node"),
    pytest.param(one(SP16, [3, 4], rank=0, annotations={"sp-block": "2"}), ["CHIP_PAIR"], id="sp16-halves"),
    pytest.param(one(SP8, [6, 7], rank=0, annotations={"sp-block": "2"}), [], id="sp8-pair"),
    pytest.param(one(SP8, [0, 3], rank=0, annotations={"sp-block": "2"}), ["CHIP_PAIR"], id="sp8-halves"),
    pytest.param(one("module-910b-8", [1, 2]), [], id="910b8-has-no-pairs"),
]


@pytest.mark.parametrize(("objects", "expected"), CHIP_PAIR_CASES)
def test_chip_pair(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


def shared(accel: str, chips: list[list[int]], notes: dict | None = None) -> list[dict]:
    """All pods of a multi-pod job on node n1."""
    return [
        node("n1", accel, super_pod=0),
        *job_pods("j", [("n1", c) for c in chips], selector=accel, annotations=notes),
    ]


NODE_SHARED_CASES = [
    pytest.param(
        shared("module", [[0, 1, 2, 3], [4, 5, 6, 7]]), ["NODE_SHARED"], id="module-two-pods-one-node"
    ),
    pytest.param(
        shared(A3, [[0, 1], [2, 3], [4, 5]]), ["NODE_SHARED", "NODE_SHARED"], id="a3-three-pods-one-node"
    ),
    pytest.param(
        shared(SP8, [[0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 6, 7]], {"sp-block": "16"}),
        ["CHIP_CONFLICT", "NODE_SHARED"],
        id="superpod-two-pods-one-node",
    ),
    pytest.param(two_pods("module", [[0, 1, 2, 3], [0, 1, 2, 3]]), [], id="module-one-pod-per-node"),
    pytest.param(shared("module-910b-8", [[0, 1, 2, 3], [4, 5, 6, 7]]), [], id="910b8-may-share"),
    pytest.param(shared(B16, [[0, 1], [8, 9]]), [], id="910b16-may-share"),
    pytest.param(shared("half", [[0, 1], [2, 3]]), [], id="half-may-share"),
    pytest.param(
        [
            node("n1", "module"),
            pod("a", chips=[0], on="n1", job="ja", selector="module"),
            pod("b", chips=[4], on="n1", job="jb", selector="module"),
        ],
        [],
        id="module-two-single-pod-jobs",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), NODE_SHARED_CASES)
def test_node_shared(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


B8 = "module-910b-8"
GANG_CASES = [
    pytest.param(
        [
            node("n1", B8),
            podgroup("j", 3),
            *job_pods("j", [("n1", [0]), ("n1", [1]), (None, None)], selector=B8, request=1),
        ],
        ["GANG_INCOMPLETE"],
        id="podgroup-min-3-placed-2",
    ),
    pytest.param(
        [
            node("n1", B8),
            podgroup("j", 2),
            *job_pods("j", [("n1", [0]), ("n1", [1]), (None, None)], selector=B8, request=1),
        ],
        [],
        id="podgroup-min-2-placed-2",
    ),
    pytest.param(
        [node("n1", B8), podgroup("j", 3), *job_pods("j", [(None, None)] * 3, selector=B8, request=1)],
        [],
        id="nothing-placed-is-queued-not-partial",
    ),
    pytest.param(
        [
            node("n1", B8),
            acjob("j", {"Worker": (4, 1, B8)}, min_available=3),
            *[pod(f"j-w{i}", chips=[i], on="n1", owner="j", selector=B8) for i in range(2)],
        ],
        ["GANG_INCOMPLETE"],
        id="ascendjob-min-available",
    ),
    pytest.param(
        [
            node("n1", B8),
            acjob("j", {"Master": (1, 1, B8), "Worker": (3, 1, B8)}),
            *[pod(f"j-w{i}", chips=[i], on="n1", owner="j", selector=B8) for i in range(3)],
        ],
        ["GANG_INCOMPLETE"],
        id="ascendjob-total-replicas",
    ),
    pytest.param(
        [
            node("n1", B8),
            podgroup("j", 1, owner="j"),
            acjob("j", {"Worker": (4, 1, B8)}, min_available=4),
            pod("j-w0", chips=[0], on="n1", owner="j", group="j", selector=B8),
        ],
        [],
        id="podgroup-min-member-wins",
    ),
    pytest.param(
        [
            node("n1", B8),
            podgroup("j", 2, npu=2),
            pod("j-launcher", on="n1", group="j"),
            pod("j-w0", chips=[0], on="n1", group="j", selector=B8),
        ],
        [],
        id="non-npu-pods-count-for-the-gang",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), GANG_CASES)
def test_gang_incomplete(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


def superpod_job(
    super_pods: list[int | str | None],
    sp_block: str = "32",
    *,
    cm: dict[int, int] | None = None,
    accel: str = SP16,
) -> list[dict]:
    """Pods rank 0..n-1 of a SuperPoD job on nodes n0..n(n-1) with the given superPodID annotations."""
    chips = list(range(16 if accel == SP16 else 8))
    nodes = [node(f"n{i}", accel, super_pod=sid) for i, sid in enumerate(super_pods)]
    infos = [device_info(f"n{i}", super_pod=sid) for i, sid in (cm or {}).items()]
    return [
        *nodes,
        *infos,
        *job_pods(
            "j",
            [(f"n{i}", chips) for i in range(len(super_pods))],
            selector=accel,
            annotations={"sp-block": sp_block},
        ),
    ]


SUPERPOD_CASES = [
    pytest.param(superpod_job([0, 0]), [], id="one-logical-in-one-physical"),
    pytest.param(superpod_job([0, 1]), ["SUPERPOD_SPLIT"], id="one-logical-across-two-physical"),
    pytest.param(superpod_job([0, 0, 1, 1]), [], id="two-logical-each-in-one-physical"),
    pytest.param(
        superpod_job([0, 1, 1, 0]), ["SUPERPOD_SPLIT", "SUPERPOD_SPLIT"], id="two-logical-both-split"
    ),
    pytest.param(superpod_job([0, 0, 0, 1], "64"), ["SUPERPOD_SPLIT"], id="block-64-minority-pod-named"),
    pytest.param(superpod_job([0, -1]), ["SUPERPOD_SPLIT"], id="unknown-id-minus-1"),
    pytest.param(superpod_job([-2, -2]), ["SUPERPOD_SPLIT", "SUPERPOD_SPLIT"], id="unknown-id-minus-2"),
    pytest.param(superpod_job([0, None]), ["SUPERPOD_SPLIT"], id="absent-id"),
    pytest.param(superpod_job([0, None], cm={1: 0}), [], id="id-from-device-info-configmap"),
    pytest.param(superpod_job([0, None], cm={1: 3}), ["SUPERPOD_SPLIT"], id="configmap-id-differs"),
    pytest.param(superpod_job([2, 2], cm={0: 5, 1: 7}), [], id="node-annotation-wins-over-configmap"),
    pytest.param(superpod_job([0, 0, 1, 1], "16", accel=SP8), [], id="x8-block-16-two-logical"),
    pytest.param(superpod_job([0, 1], "16", accel=SP8), ["SUPERPOD_SPLIT"], id="x8-split"),
    pytest.param(
        [
            node("n1", "module-a3-16", super_pod=-1),
            pod("p", chips=[0, 1], on="n1", job="j", selector="module-a3-16"),
        ],
        [],
        id="non-superpod-profile-ignores-ids",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), SUPERPOD_CASES)
def test_superpod_split(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


def test_superpod_split_names_the_pods_off_the_majority() -> None:
    report = run(superpod_job([0, 0, 0, 1], "64"))
    assert [(v.pod, v.node) for v in report.violations] == [("default/j-worker-3", "n3")]
