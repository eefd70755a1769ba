"""Chip-level placement rules: SELECTOR_MISMATCH, COUNT_MISMATCH, CHIP_MISSING, CHIP_CONFLICT,
CHIP_UNHEALTHY, NODE_UNKNOWN; every profile's chip range."""

from __future__ import annotations

import pytest
from placement_kube import codes, device_info, job_pods, node, pod, run

B8 = "module-910b-8"


def one(
    accel: str | None,
    chips: list[int] | str | None,
    *,
    request: int | None = None,
    selector: str | None = "same",
) -> list[dict]:
    """One node of a type and one single-pod job on it."""
    selector = accel if selector == "same" else selector
    return [node("n1", accel), pod("p", chips=chips, request=request, on="n1", job="j", selector=selector)]


SELECTOR_MISMATCH_CASES = [
    pytest.param(
        one("module-910b-16", [0, 1], selector=B8), ["SELECTOR_MISMATCH"], id="910b8-pod-on-910b16-node"
    ),
    pytest.param(one(B8, [0, 1]), [], id="same-type"),
    pytest.param(
        one(None, [0, 1], selector="module"),
        ["SELECTOR_MISMATCH"],
        id="selector-module-on-node-without-label",
    ),
    pytest.param(one("module", [0, 1], selector=None), [], id="no-selector-never-a-mismatch"),
    pytest.param(
        [
            node("n1", B8),
            pod("launcher", on="n1", job="j", selector="module-910b-16"),
            pod("w", chips=[0], on="n1", job="j", selector=B8),
        ],
        ["SELECTOR_MISMATCH"],
        id="non-npu-pod-of-npu-job-is-checked-too",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), SELECTOR_MISMATCH_CASES)
def test_selector_mismatch(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


COUNT_MISMATCH_CASES = [
    pytest.param(one(B8, [0, 1], request=4), ["COUNT_MISMATCH"], id="fewer-chips-than-request"),
    pytest.param(one(B8, [0, 1, 2], request=2), ["COUNT_MISMATCH"], id="more-chips-than-request"),
    pytest.param(one(B8, None, request=2), ["COUNT_MISMATCH"], id="placed-without-annotation"),
    pytest.param(one(B8, "", request=2), ["COUNT_MISMATCH"], id="empty-annotation"),
    pytest.param(one(B8, "Ascend910-0,Ascend910-0", request=2), ["COUNT_MISMATCH"], id="repeated-id"),
    pytest.param(one(B8, "Ascend910-0, Ascend910-1", request=2), [], id="spaces-after-commas-ok"),
    pytest.param(
        [node("n1", B8), pod("p", request=2, on="n1", job="j", selector=B8, phase="Succeeded")],
        [],
        id="finished-pod-holds-nothing",
    ),
    pytest.param(
        [node("n1", B8), pod("p", request=2, job="j", selector=B8, phase="Pending")],
        [],
        id="pending-pod-not-placed",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), COUNT_MISMATCH_CASES)
def test_count_mismatch(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


# One valid and one out-of-range chip per profile: the range is the profile's chips/node.
RANGE_CASES = [
    ("module", 7, 8),
    ("half", 3, 4),
    ("card", 1, 2),
    ("card-910b-2", 1, 2),
    (B8, 7, 8),
    ("module-910b-16", 15, 16),
    ("module-a3-16", 15, 16),
    ("module-a3-16-super-pod", 15, 16),
    ("module-a3-8-super-pod", 7, 8),
]


@pytest.mark.parametrize(("accel", "last", "beyond"), RANGE_CASES, ids=[case[0] for case in RANGE_CASES])
def test_chip_range_per_profile(accel: str, last: int, beyond: int) -> None:
    def objects(chip: int) -> list[dict]:
        notes = {"sp-block": "1"} if "super-pod" in accel else None
        return [
            node("n1", accel, super_pod=0),
            pod("p", chips=[chip], on="n1", job="j", selector=accel, rank=0, annotations=notes),
        ]

    assert codes(objects(last)) == []
    assert codes(objects(beyond)) == ["CHIP_MISSING"]


CHIP_MISSING_CASES = [
    pytest.param(one(B8, [7]), [], id="last-chip-in-range"),
    pytest.param(one(B8, "Ascend910-8", request=1), ["CHIP_MISSING"], id="id-out-of-range-alone"),
    pytest.param(one(B8, "Ascend910-x", request=1), ["CHIP_MISSING"], id="id-not-a-number"),
    pytest.param(one(B8, "npu0", request=1), ["CHIP_MISSING"], id="no-prefix"),
    pytest.param(one(B8, "Ascend910-0,", request=2), ["CHIP_MISSING"], id="trailing-comma-is-an-entry"),
    pytest.param(
        one("module", "Ascend910-0,Ascend910-1,Ascend910-2,Ascend910-12", request=4),
        ["CHIP_MISSING"],
        id="bad-id-skips-ring-check",
    ),
    pytest.param(
        [node("other", B8), pod("p", chips="Ascend910-99", request=1, on="gone", job="j", selector=B8)],
        ["NODE_UNKNOWN"],
        id="unknown-node-range-not-judged",
    ),
    pytest.param(
        [node("other", B8), pod("p", chips="garbage", request=1, on="gone", job="j", selector=B8)],
        ["CHIP_MISSING", "NODE_UNKNOWN"],
        id="unknown-node-unparseable-still-reported",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), CHIP_MISSING_CASES)
def test_chip_missing(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


CHIP_CONFLICT_CASES = [
    pytest.param(
        [
            node("n1", B8),
            pod("a", chips=[0, 1], on="n1", job="ja", selector=B8),
            pod("b", chips=[1, 2], on="n1", job="jb", selector=B8),
        ],
        ["CHIP_CONFLICT"],
        id="two-jobs-share-chip",
    ),
    pytest.param(
        [
            node("n1", B8),
            node("n2", B8),
            pod("a", chips=[0, 1], on="n1", job="ja", selector=B8),
            pod("b", chips=[0, 1], on="n2", job="jb", selector=B8),
        ],
        [],
        id="same-ids-on-different-nodes",
    ),
    pytest.param(
        [
            node("n1", B8),
            pod("a", chips=[0, 1], on="n1", job="ja", selector=B8),
            pod("b", chips=[0, 1], on="n1", job="jb", selector=B8, phase="Failed"),
        ],
        [],
        id="failed-pod-released-its-chips",
    ),
    pytest.param(
        [node("n1", B8), *job_pods("j", [("n1", [0, 1]), ("n1", [1, 2]), ("n1", [2, 3])], selector=B8)],
        ["CHIP_CONFLICT", "CHIP_CONFLICT"],
        id="within-one-job-each-later-holder",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), CHIP_CONFLICT_CASES)
def test_chip_conflict(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


def test_chip_conflict_names_both_pods() -> None:
    report = run(CHIP_CONFLICT_CASES[0].values[0])
    (violation,) = report.violations
    assert (violation.pod, violation.node) == ("default/b", "n1")
    assert "default/a" in violation.message and "1" in violation.message


CHIP_UNHEALTHY_CASES = [
    pytest.param(
        [*one(B8, [0, 1]), device_info("n1", unhealthy=[1])], ["CHIP_UNHEALTHY"], id="holds-unhealthy"
    ),
    pytest.param([*one(B8, [0, 1]), device_info("n1", unhealthy=[2, 3])], [], id="unhealthy-chips-not-held"),
    pytest.param(
        [*one(B8, [0, 1]), device_info("n1", network=[0])], [], id="network-unhealthy-single-pod-ok"
    ),
    pytest.param(
        [
            node("n1", B8),
            node("n2", B8),
            *job_pods("j", [("n1", [0]), ("n2", [0])], selector=B8),
            device_info("n2", network=[0]),
        ],
        ["CHIP_UNHEALTHY"],
        id="network-unhealthy-multi-pod",
    ),
    pytest.param(
        [
            node("n1", B8),
            node("n2", B8),
            *job_pods("j", [("n1", [0]), ("n2", [0])], selector=B8),
            device_info("n2", network=[0], unhealthy=[0]),
        ],
        ["CHIP_UNHEALTHY", "CHIP_UNHEALTHY"],
        id="both-lists-multi-pod",
    ),
    pytest.param([*one(B8, [0, 1]), device_info("n9", unhealthy=[0, 1])], [], id="report-of-another-node"),
]


@pytest.mark.parametrize(("objects", "expected"), CHIP_UNHEALTHY_CASES)
def test_chip_unhealthy(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


def test_node_unknown_is_a_warning_and_skips_node_checks() -> None:
    """On a known module node, chips 3,4 would break the ring and chip 3 would be unhealthy."""
    objects = [
        node("n1", B8),
        pod("p", chips=[3, 4], on="gone", job="j", selector="module"),
        device_info("gone", unhealthy=[3]),
    ]
    report = run(objects)
    assert [(v.code.value, v.severity, v.pod, v.node) for v in report.violations] == [
        ("NODE_UNKNOWN", "warning", "default/p", "gone")
    ]


def test_node_unknown_alone_keeps_the_report_valid() -> None:
    report = run([node("n1", B8), pod("p", chips=[0], on="gone", job="j", selector=B8)])
    assert report.valid is True
    assert [v.code.value for v in report.violations] == ["NODE_UNKNOWN"]


def test_without_nodes_no_placement_rule_runs() -> None:
    """A snapshot of pods alone (no Node objects) gets only the request-level rules."""
    objects = [
        pod("a", chips=[0, 9], request=4, on="n1", job="j", selector=B8),
        pod("b", chips=[0], on="n1", job="k", selector=B8),
        device_info("n1", unhealthy=[0]),
    ]
    assert codes(objects) == []
