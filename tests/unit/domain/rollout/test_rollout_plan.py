"""Batch planning: sizes, canary, failure-domain alignment, errors, projection."""

from __future__ import annotations

import pytest

from ufcctl.domain.rollout.plan import NodeRef, PlanError, plan_batches, project


def _nodes(spec: str) -> list[NodeRef]:
    """'a:t1 b:t1 c:t2' -> nodes with domains; 'a b c' -> nodes without."""
    out = []
    for item in spec.split():
        name, _, domain = item.partition(":")
        out.append(NodeRef(name, domain or None))
    return out


def _shape(plan) -> list[str]:
    return [("*" if b.canary else "") + ",".join(b.hosts) for b in plan.batches]


@pytest.mark.parametrize(
    ("spec", "batch", "canary", "align", "expected"),
    [
        pytest.param("a b c d e", 2, 0, "none", ["a,b", "c,d", "e"], id="plain-chunks"),
        pytest.param("a b c d e", 2, 1, "none", ["*a", "b,c", "d,e"], id="canary-first"),
        pytest.param("a b c", 5, 0, "none", ["a,b,c"], id="one-batch"),
        pytest.param("a:t1 b:t2 c:t1 d:t2", 2, 0, "tor", ["a,c", "b,d"], id="grouped-by-tor"),
        pytest.param("a:t1 b:t1 c:t2 d:t3", 3, 0, "tor", ["a,b,c", "d"], id="small-domains-share"),
        pytest.param("a:t1 b:t1 c:t1 d:t2 e:t2", 2, 0, "tor", ["a,b", "c", "d,e"], id="big-domain-then-next"),
        pytest.param(
            "a:t1 b:t1 c:t1 d:t2", 2, 0, "tor", ["a,b", "c,d"], id="remainder-shares-with-whole-domain"
        ),
        pytest.param("a:s1 b:s1 c:s2 d:s2", 2, 1, "superpod", ["*a", "b", "c,d"], id="canary-then-aligned"),
        pytest.param("a b c", 2, 3, "none", ["*a,b,c"], id="all-canary"),
    ],
)
def test_plan_shapes(spec: str, batch: int, canary: int, align: str, expected: list[str]) -> None:
    plan = plan_batches(_nodes(spec), batch_size=batch, canary=canary, align=align)
    assert _shape(plan) == expected
    assert sorted(plan.hosts()) == sorted(n.name for n in _nodes(spec))
    assert [b.index for b in plan.batches] == list(range(len(plan.batches)))


def test_aligned_domain_spans_the_fewest_batches() -> None:
    # 24 nodes on one ToR with batches of 16: 2 consecutive batches, never 3
    nodes = [NodeRef(f"n{i:02d}", "t1") for i in range(24)] + [NodeRef(f"m{i}", "t2") for i in range(8)]
    plan = plan_batches(nodes, batch_size=16, align="tor")
    touching = [b.index for b in plan.batches if "t1" in b.domains]
    assert touching == [0, 1]
    assert all(len(b.hosts) <= 16 for b in plan.batches)


def test_batches_record_their_domains() -> None:
    plan = plan_batches(_nodes("a:t1 b:t2 c:t3"), batch_size=2, align="tor")
    assert [b.domains for b in plan.batches] == [("t1", "t2"), ("t3",)]


@pytest.mark.parametrize(
    ("spec", "kwargs", "message"),
    [
        pytest.param("", {"batch_size": 2}, "no nodes", id="empty"),
        pytest.param("a b", {"batch_size": 0}, "at least 1", id="zero-batch"),
        pytest.param("a b", {"batch_size": 1, "window": 0}, "window", id="zero-window"),
        pytest.param("a b", {"batch_size": 1, "canary": 3}, "canary 3", id="canary-too-big"),
        pytest.param("a:t1 b", {"batch_size": 1, "align": "tor"}, "have no npu_tor_id: b", id="missing-tor"),
        pytest.param("a b", {"batch_size": 1, "align": "rack"}, "unknown alignment", id="bad-align"),
        pytest.param("a a", {"batch_size": 1}, "listed twice: a", id="duplicate"),
    ],
)
def test_plan_errors(spec: str, kwargs: dict, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        plan_batches(_nodes(spec), **kwargs)


@pytest.mark.parametrize(
    ("nodes", "batch", "window", "canary", "expected"),
    [
        pytest.param(10, 2, 1, 0, 50.0, id="5-rounds"),
        pytest.param(10, 2, 2, 0, 30.0, id="window-2"),
        pytest.param(10, 2, 1, 1, 10.0 + 50.0, id="canary-adds-one-round"),
        pytest.param(16000, 200, 1, 0, 80 * 10.0, id="16k"),
    ],
)
def test_projection(nodes: int, batch: int, window: int, canary: int, expected: float) -> None:
    fleet = [NodeRef(f"n{i}") for i in range(nodes)]
    plan = plan_batches(fleet, batch_size=batch, window=window, canary=canary)
    assert project(plan, 10.0, "--node-seconds").total_seconds == pytest.approx(expected)


def test_projection_rejects_non_positive_node_time() -> None:
    plan = plan_batches(_nodes("a"), batch_size=1)
    with pytest.raises(PlanError, match="positive"):
        project(plan, 0, "x")


def test_16k_nodes_plan_quickly_and_completely() -> None:
    nodes = [NodeRef(f"node{i:05d}", f"tor{i // 16}") for i in range(16000)]
    plan = plan_batches(nodes, batch_size=200, canary=8, align="tor")
    assert plan.nodes == 16000
    assert plan.batches[0].canary and len(plan.batches[0].hosts) == 8
    # every ToR (16 nodes) sits inside one batch: 200 is not a multiple of 16, so batches hold 12 ToRs
    for batch in plan.batches[1:]:
        assert len(batch.hosts) <= 200
    assert len({b.index for b in plan.batches for d in b.domains if d == "tor5"}) == 1
