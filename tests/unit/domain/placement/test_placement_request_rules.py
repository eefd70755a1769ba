"""Request-level rules (CHIP_COUNT, SELECTOR_MISSING, SP_BLOCK, TOR_LABEL) for every hardware profile."""

from __future__ import annotations

import pytest
from placement_kube import acjob, codes, cpu_node, job_pods, node, pod, podgroup, tor

SP16 = "module-a3-16-super-pod"
SP8 = "module-a3-8-super-pod"


def single(chips: int, selector: str | None) -> list[dict]:
    """A job file alone: one AscendJob with one NPU pod, no Nodes (request-level rules only)."""
    return [acjob("j", {"Worker": (1, chips, selector)})]


def multi(chips: int, selector: str | None, pods: int = 2) -> list[dict]:
    return [acjob("j", {"Worker": (pods, chips, selector)})]


CHIP_COUNT_CASES = [
    # module (910A, also the default without a selector): 1, 2, 4, 8
    pytest.param(single(1, "module"), [], id="module-single-1-ok"),
    pytest.param(single(2, "module"), [], id="module-single-2-ok"),
    pytest.param(single(4, "module"), [], id="module-single-4-ok"),
    pytest.param(single(8, "module"), [], id="module-single-8-ok"),
    pytest.param(single(3, "module"), ["CHIP_COUNT"], id="module-single-3-bad"),
    pytest.param(single(6, None), ["CHIP_COUNT"], id="no-selector-uses-module-6-bad"),
    pytest.param(multi(8, "module"), [], id="module-multi-8-ok"),
    pytest.param(multi(4, "module"), [], id="module-multi-4-ok"),
    pytest.param(multi(5, "module"), ["CHIP_COUNT"], id="module-multi-5-bad"),
    pytest.param(single(16, "module"), ["CHIP_COUNT"], id="module-single-16-bad"),
    # half: 1, 2, 4
    pytest.param(single(4, "half"), [], id="half-single-4-ok"),
    pytest.param(multi(2, "half"), [], id="half-multi-2-ok"),
    pytest.param(single(3, "half"), ["CHIP_COUNT"], id="half-single-3-bad"),
    pytest.param(single(8, "half"), ["CHIP_COUNT"], id="half-single-8-bad"),
    # card: single 1 or 2, multi 2
    pytest.param(single(1, "card"), [], id="card-single-1-ok"),
    pytest.param(single(2, "card"), [], id="card-single-2-ok"),
    pytest.param(multi(2, "card"), [], id="card-multi-2-ok"),
    pytest.param(multi(1, "card"), ["CHIP_COUNT"], id="card-multi-1-bad-one-per-replica-spec"),
    pytest.param(single(4, "card"), ["CHIP_COUNT"], id="card-single-4-bad"),
    # card-910b-2: 1, 2
    pytest.param(multi(1, "card-910b-2"), [], id="card910b2-multi-1-ok"),
    pytest.param(single(2, "card-910b-2"), [], id="card910b2-single-2-ok"),
    pytest.param(single(3, "card-910b-2"), ["CHIP_COUNT"], id="card910b2-single-3-bad"),
    # module-910b-8: 1-8
    pytest.param(single(5, "module-910b-8"), [], id="910b8-single-5-ok"),
    pytest.param(multi(7, "module-910b-8"), [], id="910b8-multi-7-ok"),
    pytest.param(single(9, "module-910b-8"), ["CHIP_COUNT"], id="910b8-single-9-bad"),
    # module-910b-16: 1-8, 10, 12, 14, 16
    pytest.param(single(7, "module-910b-16"), [], id="910b16-single-7-ok"),
    pytest.param(single(10, "module-910b-16"), [], id="910b16-single-10-ok"),
    pytest.param(multi(16, "module-910b-16"), [], id="910b16-multi-16-ok"),
    pytest.param(single(9, "module-910b-16"), ["CHIP_COUNT"], id="910b16-single-9-bad"),
    pytest.param(single(15, "module-910b-16"), ["CHIP_COUNT"], id="910b16-single-15-bad"),
    # module-a3-16: single 1 or even, multi even
    pytest.param(single(1, "module-a3-16"), [], id="a316-single-1-ok"),
    pytest.param(single(6, "module-a3-16"), [], id="a316-single-6-ok"),
    pytest.param(multi(16, "module-a3-16"), [], id="a316-multi-16-ok"),
    pytest.param(multi(1, "module-a3-16"), ["CHIP_COUNT"], id="a316-multi-1-bad"),
    pytest.param(single(3, "module-a3-16"), ["CHIP_COUNT"], id="a316-single-3-bad"),
    pytest.param(single(18, "module-a3-16"), ["CHIP_COUNT"], id="a316-single-18-bad"),
    # SuperPoD profiles: counts judged by SP_BLOCK only, never CHIP_COUNT
    pytest.param(
        [acjob("j", {"Worker": (1, 3, SP16)}, annotations={"sp-block": "3"})],
        ["SP_BLOCK"],
        id="superpod16-single-3-is-sp-block-not-chip-count",
    ),
    pytest.param(
        [acjob("j", {"Worker": (1, 6, SP8)}, annotations={"sp-block": "6"})], [], id="superpod8-single-6-ok"
    ),
]


@pytest.mark.parametrize(("objects", "expected"), CHIP_COUNT_CASES)
def test_chip_count(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


def test_chip_count_on_pods_uses_their_own_requests() -> None:
    """With pods in the input, each pod is judged (named in the violation), not the template."""
    objects = [
        acjob("j", {"Worker": (2, 8, "module")}),
        *job_pods("j", [(None, None)] * 2, request=3, selector="module"),
    ]
    from placement_kube import run

    report = run(objects)
    assert [(v.code.value, v.pod) for v in report.violations] == [
        ("CHIP_COUNT", "default/j-worker-0"),
        ("CHIP_COUNT", "default/j-worker-1"),
    ]


SELECTOR_MISSING_CASES = [
    pytest.param(
        [node("n1", "module-910b-8"), pod("p", chips=[0, 1], on="n1", job="j")],
        ["SELECTOR_MISSING"],
        id="placed-on-910b-without-selector",
    ),
    pytest.param(
        [node("n1", "module-910b-8"), pod("p", chips=[0, 1], on="n1", job="j", selector="module-910b-8")],
        [],
        id="placed-on-910b-with-selector",
    ),
    pytest.param(
        [node("n1"), pod("p", chips=[0, 1], on="n1", job="j")], [], id="placed-on-unlabeled-module-node"
    ),
    pytest.param(
        [node("n1", "module"), pod("p", chips=[4, 5], on="n1", job="j")], [], id="placed-on-module-label"
    ),
    pytest.param(
        [cpu_node("master"), node("n1", "module-a3-16"), pod("p", request=2, job="j")],
        ["SELECTOR_MISSING"],
        id="unplaced-cluster-only-a3-cpu-master-ignored",
    ),
    pytest.param(
        [node("n0"), node("n1", "module-a3-16"), pod("p", request=2, job="j")],
        [],
        id="unplaced-cluster-has-a-module-node",
    ),
    pytest.param([pod("p", request=2, job="j")], [], id="no-nodes-in-input-not-checked"),
    pytest.param(
        [node("n1", "module-a3-16"), pod("p", request=2, job="j", on="gone", phase="Succeeded")],
        [],
        id="finished-job-is-not-judged-as-unplaced",
    ),
    pytest.param(
        [node("n1", "module-a3-16"), acjob("j", {"Worker": (2, 2, None)})],
        ["SELECTOR_MISSING"],
        id="ascendjob-without-pods-on-a3-cluster",
    ),
    pytest.param(
        [node("n1", "module-910b-8"), pod("p", request=2, job="j", selector="module-910b-8")],
        [],
        id="unplaced-with-selector",
    ),
    pytest.param(
        [
            node("n1", "module-910b-8"),
            acjob("j", {"Worker": (1, 8, "module-910b-8")}),
            pod("p", chips=range(8), on="n1", owner="j"),
        ],
        [],
        id="selector-on-ascendjob-template-wins-over-pod-without-one",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), SELECTOR_MISSING_CASES)
def test_selector_missing(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


def sp(chips: int, pods: int, sp_block: str | None, selector: str = SP16) -> list[dict]:
    notes = {} if sp_block is None else {"sp-block": sp_block}
    return [acjob("j", {"Worker": (pods, chips, selector)}, annotations=notes)]


SP_BLOCK_CASES = [
    pytest.param(sp(16, 2, "32"), [], id="multi-2x16-block-32-ok"),
    pytest.param(sp(16, 4, "32"), [], id="multi-4x16-block-32-two-logical-ok"),
    pytest.param(sp(16, 2, None), ["SP_BLOCK"], id="missing"),
    pytest.param(sp(16, 2, "abc"), ["SP_BLOCK"], id="not-a-number"),
    pytest.param(sp(16, 2, "0"), ["SP_BLOCK"], id="zero"),
    pytest.param(sp(16, 2, "-16"), ["SP_BLOCK"], id="negative"),
    pytest.param(sp(8, 2, "32"), ["SP_BLOCK", "SP_BLOCK"], id="multi-8-per-pod-and-total-16-below-block"),
    pytest.param(sp(16, 2, "24"), ["SP_BLOCK", "SP_BLOCK"], id="multi-block-not-multiple-of-chips-and-total"),
    pytest.param(sp(16, 3, "32"), ["SP_BLOCK"], id="multi-total-48-not-multiple-of-block-32"),
    pytest.param(sp(16, 49, str(16 * 49)), ["SP_BLOCK"], id="multi-block-49-nodes-exceeds-48"),
    pytest.param(sp(16, 48, str(16 * 48)), [], id="multi-block-48-nodes-fits"),
    pytest.param(sp(1, 1, "1"), [], id="single-1-block-1-ok"),
    pytest.param(sp(8, 1, "8"), [], id="single-8-block-8-ok"),
    pytest.param(sp(16, 1, "16"), [], id="single-16-block-16-ok"),
    pytest.param(sp(16, 1, "32"), [], id="single-16-block-32-multiple-ok"),
    pytest.param(sp(8, 1, "4"), ["SP_BLOCK"], id="single-block-below-node-must-equal-request"),
    pytest.param(sp(3, 1, "3"), ["SP_BLOCK"], id="single-odd-request"),
    pytest.param(sp(18, 1, "18"), ["SP_BLOCK", "SP_BLOCK"], id="single-request-above-node"),
    pytest.param(sp(16, 1, "24"), ["SP_BLOCK"], id="single-block-above-node-not-multiple"),
    pytest.param(sp(8, 2, "16", SP8), [], id="x8-multi-2x8-block-16-ok"),
    pytest.param(sp(16, 2, "32", SP8), ["SP_BLOCK"], id="x8-multi-16-per-pod-bad"),
    pytest.param(sp(8, 1, "8", SP8), [], id="x8-single-8-ok"),
    pytest.param(
        [acjob("j", {"Worker": (2, 16, SP16)}, template_annotations={"sp-block": "32"})],
        [],
        id="sp-block-from-pod-template",
    ),
    pytest.param(
        [
            acjob(
                "j",
                {"Worker": (2, 16, SP16)},
                annotations={"sp-block": "32"},
                template_annotations={"sp-block": "x"},
            )
        ],
        [],
        id="job-annotation-wins-over-template",
    ),
]


@pytest.mark.parametrize(("objects", "expected"), SP_BLOCK_CASES)
def test_sp_block(objects: list[dict], expected: list[str]) -> None:
    assert codes(objects) == expected


def test_super_pod_size_option_changes_the_limit() -> None:
    objects = sp(16, 64, str(16 * 64))
    assert codes(objects) == ["SP_BLOCK"]
    assert codes(objects, super_pod_size=64) == []


TOR_LABEL_CASES = [
    pytest.param("large-model-schema", [], id="large-model-schema"),
    pytest.param("normal-schema", [], id="normal-schema"),
    pytest.param("null", [], id="null"),
    pytest.param("large-model", ["TOR_LABEL"], id="typo"),
    pytest.param("", ["TOR_LABEL"], id="empty"),
]


@pytest.mark.parametrize(("value", "expected"), TOR_LABEL_CASES)
def test_tor_label(value: str, expected: list[str]) -> None:
    assert (
        codes([acjob("j", {"Worker": (4, 8, "module-910b-8")}, labels={"tor-affinity": value})]) == expected
    )


def test_tor_label_on_pods_of_a_podgroup_job() -> None:
    objects = [
        node("n1", "module-910b-8"),
        tor({0: ["n1"]}),
        podgroup("j", 1),
        *job_pods("j", [("n1", [0])], selector="module-910b-8", labels={"tor-affinity": "bogus"}),
    ]
    assert codes(objects) == ["TOR_LABEL"]


def test_tor_label_job_value_wins_over_pods() -> None:
    objects = [
        podgroup("j", 1, labels={"tor-affinity": "normal-schema"}),
        *job_pods("j", [(None, None)], request=1, labels={"tor-affinity": "bogus"}),
    ]
    assert codes(objects) == []
