"""`ufcctl images preheat --dry-run` for people and as JSON: the plan, the registry caches serving the
targets, and the upstream traffic expected per image."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.images.preheat import Traffic
from ufcctl.domain.rollout.plan import Projection, RolloutPlan
from ufcctl.report.output import human_bytes
from ufcctl.report.rollout import plan_json, print_plan

# Measured in the lab (tests/integration/test_images_lab.py, issue 31): each cache host's front collapses
# docker-registry 2.8's two fetches of a missed blob into one, and a ToR cache fills from its super pod's.
CACHE_MISS_NOTE = ("counted once per cache that fills from the upstream (super pod caches, and ToR caches "
                   "without one); a ToR cache fills from its super pod's cache, from the upstream only "
                   "while that cache does not answer")


@dataclass(frozen=True)
class PreheatPlan:
    """What a preheat dry run found (the command copies it from the use case's result)."""

    plan: RolloutPlan
    projection: Projection | None
    targets: int
    caches: Sequence[str]  # registry_cache hosts serving at least one target node
    all_caches: int
    traffic: Sequence[Traffic]
    why_unknown: Mapping[str, str]  # image -> why its size is unknown


def preheat_plan_json(plan: PreheatPlan) -> dict[str, Any]:
    known = [t.total for t in plan.traffic if t.total is not None]
    return {**plan_json(plan.plan, plan.projection, plan.targets),
            "caches_serving": list(plan.caches), "caches_total": plan.all_caches,
            "upstream_traffic": [{"image": t.image, "size": t.size, "pulls": t.pulls, "via": t.via,
                                  "bytes": t.total, "why_unknown": plan.why_unknown.get(t.image)}
                                 for t in plan.traffic],
            "upstream_bytes_known": sum(known), "upstream_bytes_complete": len(known) == len(plan.traffic),
            "note": CACHE_MISS_NOTE if any(t.via == "caches" for t in plan.traffic) else None}


def print_preheat_plan(plan: PreheatPlan) -> None:
    print_plan(plan.plan, plan.projection, plan.targets)
    caches = plan.caches
    print(f"registry caches: {len(caches)} of {plan.all_caches} serve at least one target node"
          + (" (nodes pull from upstream directly)" if not caches else ""))
    print("expected upstream traffic (nothing was contacted but the upstreams' manifests):")
    for row in plan.traffic:
        unit = "cache(s)" if row.via == "caches" else "node(s), no cache for its registry" \
            if caches else "node(s)"
        total = f" = {human_bytes(row.total)}" if row.total is not None else ""
        why = f" ({plan.why_unknown[row.image]})" if row.image in plan.why_unknown else ""
        size = "unknown size" if row.size is None else human_bytes(row.size)
        print(f"  {row.image}: {size}{why} x {row.pulls} {unit}{total}")
    known = sum(t.total or 0 for t in plan.traffic)
    missing = sum(1 for t in plan.traffic if t.total is None)
    print(f"total: {human_bytes(known)}" + (f" + {missing} image(s) of unknown size" if missing else ""))
    if any(t.via == "caches" for t in plan.traffic):
        print(f"note: {CACHE_MISS_NOTE}")
