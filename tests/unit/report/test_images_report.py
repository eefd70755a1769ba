"""report/images.py: the preheat dry run's text and JSON, for the cases the lab-backed CLI tests do
not reach (no cache at all, sizes unknown)."""

from __future__ import annotations

import pytest

from ufcctl.domain.images.preheat import Traffic
from ufcctl.domain.rollout.plan import Batch, RolloutPlan
from ufcctl.report.images import CACHE_MISS_NOTE, PreheatPlan, preheat_plan_json, print_preheat_plan

MIB = 1 << 20
PLAN = RolloutPlan((Batch(1, ("n1", "n2")), Batch(2, ("n3",))), 2, 1, 0, "none")


def _plan(caches: tuple[str, ...], traffic: tuple[Traffic, ...], why: dict[str, str]) -> PreheatPlan:
    return PreheatPlan(PLAN, None, 3, caches, 4, traffic, why)


def test_no_cache_serves_a_target(capsys: pytest.CaptureFixture[str]) -> None:
    plan = _plan((), (Traffic("r.example/a:1", 10 * MIB, 3, "nodes"),
                      Traffic("r.example/b:1", None, 3, "nodes")), {"r.example/b:1": "GET failed"})
    print_preheat_plan(plan)
    out = capsys.readouterr().out
    assert "registry caches: 0 of 4 serve at least one target node (nodes pull from upstream directly)" in out
    assert "  r.example/a:1: 10.0 MiB x 3 node(s) = 30.0 MiB" in out
    assert "  r.example/b:1: unknown size (GET failed) x 3 node(s)\n" in out
    assert "total: 30.0 MiB + 1 image(s) of unknown size" in out
    assert "note:" not in out
    doc = preheat_plan_json(plan)
    assert doc["caches_serving"] == [] and doc["note"] is None
    assert doc["upstream_bytes_known"] == 30 * MIB and doc["upstream_bytes_complete"] is False


def test_caches_serve_one_registry_and_not_the_other(capsys: pytest.CaptureFixture[str]) -> None:
    plan = _plan(("cache-t1", "cache-t2"), (Traffic("cached/a:1", MIB, 2, "caches"),
                                            Traffic("direct/b:1", MIB, 3, "nodes")), {})
    print_preheat_plan(plan)
    out = capsys.readouterr().out
    assert "registry caches: 2 of 4 serve at least one target node\n" in out
    assert "  cached/a:1: 1.0 MiB x 2 cache(s) = 2.0 MiB" in out
    assert "  direct/b:1: 1.0 MiB x 3 node(s), no cache for its registry = 3.0 MiB" in out
    assert f"note: {CACHE_MISS_NOTE}" in out
    assert preheat_plan_json(plan)["upstream_bytes_complete"] is True
