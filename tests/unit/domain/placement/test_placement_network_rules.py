"""Network rules: TOR_SPAN, TOR_CM_MISSING, RANKTABLE."""

from __future__ import annotations

import pytest
from placement_kube import acjob, codes, job_pods, node, podgroup, rank_table, run, tor

B8 = "module-910b-8"
SP16 = "module-a3-16-super-pod"
LARGE = {"tor-affinity": "large-model-schema"}


def tor_job(
    pods: int, tors: dict[int, list[str]], labels: dict | None = LARGE, with_cm: bool = True
) -> list[dict]:
    names = [name for group in tors.values() for name in group]
    objects = [
        *[node(name, B8) for name in names],
        podgroup("j", pods, labels=labels),
        *job_pods("j", [(names[i], list(range(8))) for i in range(pods)], selector=B8),
    ]
    return objects + ([tor(tors)] if with_cm else [])


def superpod_tor_job(pods: int, tors: dict[int, list[str]], labels: dict | None = LARGE) -> list[dict]:
    """A SuperPoD job (16 chips per pod, sp-block 16) on nodes of physical SuperPoD 0."""
    names = [name for group in tors.values() for name in group]
    return [
        *[node(name, SP16, super_pod=0) for name in names],
        podgroup("j", pods, labels=labels, annotations={"sp-block": "16"}),
        *job_pods("j", [(names[i], list(range(16))) for i in range(pods)], selector=SP16),
        tor(tors),
    ]


TOR_SPAN_CASES = [
    pytest.param(tor_job(2, {0: ["a1", "a2"], 1: ["b1"]}), [], id="filler-2-pods-one-tor"),
    pytest.param(tor_job(2, {0: ["a1"], 1: ["b1"]}), ["TOR_SPAN"], id="filler-2-pods-two-tors"),
    pytest.param(tor_job(3, {0: ["a1", "a2"], 1: ["b1"]}), ["TOR_SPAN"], id="filler-3-pods-two-tors"),
    pytest.param(tor_job(4, {0: ["a1", "a2"], 1: ["b1", "b2"]}), [], id="large-model-4-pods-may-span"),
    pytest.param(
        tor_job(2, {0: ["a1"], 1: ["b1"]}, {"tor-affinity": "normal-schema"}), [], id="normal-schema-may-span"
    ),
    pytest.param(tor_job(2, {0: ["a1"], 1: ["b1"]}, None), [], id="no-label"),
    # The contract names no exception for SuperPoD jobs: a SuperPoD filler stays under one ToR too
    # (the shape the property test found when the test allocator broke it).
    pytest.param(superpod_tor_job(2, {0: ["a1"], 1: ["b1"]}), ["TOR_SPAN"], id="superpod-filler-two-tors"),
    pytest.param(superpod_tor_job(2, {0: ["a1", "a2"]}), [], id="superpod-filler-one-tor"),
    pytest.param(
        superpod_tor_job(4, {0: ["a1", "a2"], 1: ["b1", "b2"]}), [], id="superpod-large-model-4-pods-may-span"
    ),
    pytest.param(
        [
            node("a1", B8),
            node("x1", B8),
            podgroup("j", 2, labels=LARGE),
            tor({0: ["a1"]}),
            *job_pods("j", [("a1", [0]), ("x1", [0])], selector=B8),
        ],
        [],
        id="node-not-in-tor-map-not-judged",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), TOR_SPAN_CASES)
def test_tor_span(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


TOR_CM_CASES = [
    pytest.param(
        tor_job(2, {0: ["a1", "a2"]}, with_cm=False), ["TOR_CM_MISSING"], id="large-model-without-cm"
    ),
    pytest.param(
        tor_job(2, {0: ["a1", "a2"]}, {"tor-affinity": "normal-schema"}, with_cm=False),
        ["TOR_CM_MISSING"],
        id="normal-schema-without-cm",
    ),
    pytest.param(
        tor_job(2, {0: ["a1", "a2"]}, {"tor-affinity": "null"}, with_cm=False), [], id="null-needs-no-cm"
    ),
    pytest.param(tor_job(2, {0: ["a1", "a2"]}, None, with_cm=False), [], id="no-label-needs-no-cm"),
    pytest.param(tor_job(2, {0: ["a1", "a2"]}), [], id="cm-present"),
    pytest.param([acjob("j", {"Worker": (2, 8, B8)}, labels=LARGE)], [], id="job-file-alone-not-judged"),
    pytest.param(
        tor_job(2, {0: ["a1", "a2"]}, {"tor-affinity": "bogus"}, with_cm=False),
        ["TOR_CM_MISSING", "TOR_LABEL"],
        id="bogus-value-is-also-set",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), TOR_CM_CASES)
def test_tor_cm_missing(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


def ranked(table: dict | None, *, placements: list[tuple[str, list[int]]] | None = None) -> list[dict]:
    """AscendJob j with two 8-chip pods on n1 and n2 (ranks 0, 1), plus a rank table."""
    placements = placements or [("n1", list(range(8))), ("n2", list(range(8)))]
    per_pod = len(placements[0][1])
    objects = [
        node("n1", B8),
        node("n2", B8),
        acjob("j", {"Worker": (len(placements), per_pod, B8)}),
        *job_pods("j", placements, selector=B8),
    ]
    return objects + ([table] if table else [])


GOOD = [("n1", range(8), range(8)), ("n2", range(8), range(8, 16))]
RANKTABLE_CASES = [
    pytest.param(ranked(rank_table("j", GOOD)), [], id="matches"),
    pytest.param(ranked(rank_table("j", GOOD, server_count="3")), ["RANKTABLE"], id="server-count-wrong"),
    pytest.param(ranked(rank_table("j", GOOD, server_count=2)), [], id="server-count-as-number"),
    pytest.param(
        ranked(rank_table("j", GOOD, server_count="two")), ["RANKTABLE"], id="server-count-not-a-number"
    ),
    pytest.param(
        ranked(rank_table("j", [GOOD[0], ("n2", [0, 1, 2, 3, 4, 5, 6, 9], range(8, 16))])),
        ["RANKTABLE"],
        id="device-not-held",
    ),
    pytest.param(
        ranked(rank_table("j", [GOOD[0], ("n9", range(8), range(8, 16))], server_count="2")),
        ["RANKTABLE", "RANKTABLE"],
        id="host-without-pods-and-node-missing",
    ),
    pytest.param(
        ranked(rank_table("j", [("n1", range(8), range(8)), ("n2", range(8), range(8))])),
        ["RANKTABLE"],
        id="rank-ids-repeated",
    ),
    pytest.param(
        ranked(rank_table("j", [("n1", range(8), range(1, 9)), ("n2", range(8), range(9, 17))])),
        ["RANKTABLE"],
        id="rank-ids-not-from-zero",
    ),
    pytest.param(
        ranked(rank_table("j", [("n1", ["x", 1, 2, 3, 4, 5, 6, 7], range(8)), GOOD[1]])),
        ["RANKTABLE", "RANKTABLE"],
        id="device-id-not-a-number",
    ),
    pytest.param(
        ranked(rank_table("j", [("n9", ["bogus"], ["bogus"])], status="initializing")),
        [],
        id="not-completed-not-checked",
    ),
    pytest.param(ranked(rank_table("other", [("n9", [0], [0])])), [], id="table-of-another-job"),
    pytest.param(ranked(rank_table("j", [GOOD[0], GOOD[1]], ns="prod")), [], id="same-name-other-namespace"),
    pytest.param(
        ranked(
            rank_table("j", [("n1", range(4), range(4)), ("n1", range(4, 8), range(4, 8))]),
            placements=[("n1", [0, 1, 2, 3]), ("n1", [4, 5, 6, 7])],
        ),
        [],
        id="two-pods-one-node-compared-by-host",
    ),
    pytest.param(
        ranked(
            rank_table("j", [("n1", range(4), range(4)), ("n1", range(4), range(4, 8))]),
            placements=[("n1", [0, 1, 2, 3]), ("n1", [4, 5, 6, 7])],
        ),
        ["RANKTABLE"],
        id="two-pods-one-node-wrong-devices",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), RANKTABLE_CASES)
def test_ranktable(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


def test_ranktable_violation_names_the_node() -> None:
    objects = ranked(rank_table("j", [GOOD[0], ("n2", [0, 1, 2, 3, 4, 5, 6, 9], range(8, 16))]))
    (violation,) = run(objects).violations
    assert (violation.job, violation.node) == ("default/j", "n2")
    assert "rings-config-j" in violation.message
