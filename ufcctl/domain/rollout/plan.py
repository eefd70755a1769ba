"""Batch plans for a rollout: canary first, batches aligned with failure domains, projected duration."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# `--by` choices and the per-node topology var each one reads (docs/architecture.md, "Inventory model").
ALIGN_VARS: Mapping[str, str | None] = {"none": None, "tor": "npu_tor_id", "superpod": "npu_super_pod_id"}


class PlanError(ValueError):
    """A plan that cannot be made from these nodes and settings (the message names the fix)."""


@dataclass(frozen=True)
class NodeRef:
    """A node as the planner sees it: its name and, when aligning, its failure domain."""

    name: str
    domain: str | None = None


@dataclass(frozen=True)
class Batch:
    index: int
    hosts: tuple[str, ...]
    canary: bool = False
    domains: tuple[str, ...] = ()  # failure domains this batch touches (empty without alignment)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "canary": self.canary, "size": len(self.hosts),
                "domains": list(self.domains), "hosts": list(self.hosts)}


@dataclass(frozen=True)
class RolloutPlan:
    batches: tuple[Batch, ...]
    batch_size: int
    window: int
    canary: int
    align: str

    @property
    def nodes(self) -> int:
        return sum(len(b.hosts) for b in self.batches)

    @property
    def capacity(self) -> int:
        """Nodes allowed in flight at once: `window` batches' worth."""
        return self.batch_size * self.window

    def hosts(self) -> list[str]:
        return [h for b in self.batches for h in b.hosts]

    def batch_of(self) -> dict[str, int]:
        return {h: b.index for b in self.batches for h in b.hosts}

    def canary_hosts(self) -> tuple[str, ...]:
        return tuple(h for b in self.batches if b.canary for h in b.hosts)


@dataclass(frozen=True)
class Projection:
    node_seconds: float
    source: str  # where node_seconds came from: "--node-seconds" or "run <id> (median of N nodes)"
    canary_seconds: float
    rollout_seconds: float

    @property
    def total_seconds(self) -> float:
        return self.canary_seconds + self.rollout_seconds

    def to_json(self) -> dict[str, Any]:
        return {"node_seconds": self.node_seconds, "source": self.source,
                "canary_seconds": self.canary_seconds, "rollout_seconds": self.rollout_seconds,
                "total_seconds": self.total_seconds}


def _check_sizes(count: int, batch_size: int, canary: int, window: int) -> None:
    if count == 0:
        raise PlanError("no nodes to plan")
    if batch_size < 1:
        raise PlanError(f"batch size {batch_size} must be at least 1")
    if window < 1:
        raise PlanError(f"window {window} must be at least 1")
    if not 0 <= canary <= count:
        raise PlanError(f"canary {canary} must be between 0 and {count} (the fleet has {count} nodes)")


def _domains(nodes: Sequence[NodeRef], align: str) -> list[tuple[str, list[str]]]:
    """Nodes grouped by failure domain, domains in order of first appearance."""
    if align not in ALIGN_VARS:
        raise PlanError(f"unknown alignment {align!r}; use one of: {', '.join(ALIGN_VARS)}")
    if align == "none":
        return [("", [n.name for n in nodes])]
    missing = [n.name for n in nodes if n.domain in (None, "")]
    if missing:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise PlanError(
            f"--by {align}: {len(missing)} node(s) have no {ALIGN_VARS[align]}: {shown}; "
            f"set it in the inventory or use --by none"
        )
    groups: dict[str, list[str]] = {}
    for node in nodes:
        groups.setdefault(str(node.domain), []).append(node.name)
    return list(groups.items())


def _pack(domains: list[tuple[str, list[str]]], size: int) -> list[tuple[list[str], list[str]]]:
    """Cut domains into batches of at most `size` so each domain spans as few batches as it can.

    Whole small domains share a batch when they fit; a domain larger than a batch fills whole
    batches of its own, and only its remainder may share a batch with the next whole domains. So a
    ToR with 24 nodes and batches of 16 is done in 2 consecutive batches, never spread over 3.
    """
    # Linear in the nodes: each node is copied once (a slice of its own batch's length, or an
    # extend). Cutting `members = members[size:]` or growing `hosts = hosts + members` instead
    # copies the rest again at every batch: minutes at 200,000 nodes with --batch 1.
    batches: list[tuple[list[str], list[str]]] = []
    hosts: list[str] = []
    names: list[str] = []

    def close() -> None:
        nonlocal hosts, names
        if hosts:
            batches.append((hosts, names))
        hosts, names = [], []

    for name, members in domains:
        if len(hosts) + len(members) > size:
            close()
        start = 0
        while len(members) - start > size:  # only reached with an empty current batch
            batches.append((members[start:start + size], [name] if name else []))
            start += size
        rest = members[start:] if start else members
        hosts.extend(rest)
        if name and rest:
            names.append(name)
    close()
    return batches


def plan_batches(
    nodes: Sequence[NodeRef], *, batch_size: int, canary: int = 0, align: str = "none", window: int = 1
) -> RolloutPlan:
    """Canary batch (the first `canary` nodes) then batches of `batch_size`, in inventory order.

    With `align` = tor or superpod, nodes are grouped by that failure domain first (domains in
    order of first appearance) and batches are cut along domain boundaries (see `_pack`).
    """
    _check_sizes(len(nodes), batch_size, canary, window)
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node.name] = counts.get(node.name, 0) + 1
    duplicates = sorted(name for name, n in counts.items() if n > 1)
    if duplicates:
        raise PlanError(f"node(s) listed twice: {', '.join(duplicates[:10])}")
    domains = _domains(nodes, align)
    domain_of = {h: name for name, members in domains for h in members}
    batches: list[Batch] = []
    if canary:
        ordered = [h for _, members in domains for h in members]
        chosen = ordered[:canary]
        chosen_set = set(chosen)
        names = list(dict.fromkeys(domain_of[h] for h in chosen if domain_of[h]))
        batches.append(Batch(0, tuple(chosen), canary=True, domains=tuple(names)))
        domains = [(name, [h for h in members if h not in chosen_set]) for name, members in domains]
        domains = [(name, members) for name, members in domains if members]
    for hosts, names in _pack(domains, batch_size):
        batches.append(Batch(len(batches), tuple(hosts), domains=tuple(names)))
    return RolloutPlan(tuple(batches), batch_size, window, canary, align)


def project(plan: RolloutPlan, node_seconds: float, source: str) -> Projection:
    """Projected wall time when every node takes `node_seconds`.

    The canary batch runs alone (it gates the rest); then the remaining nodes flow through
    `plan.capacity` slots with no barriers, so they take ceil(nodes / capacity) node-times. This is
    the schedule's lower bound for equal node times; stragglers add at most their own excess.
    """
    if node_seconds <= 0:
        raise PlanError(f"node time {node_seconds} s must be positive")
    canary_nodes = len(plan.canary_hosts())
    canary_seconds = node_seconds * math.ceil(canary_nodes / plan.capacity) if canary_nodes else 0.0
    rest = plan.nodes - canary_nodes
    rollout_seconds = node_seconds * math.ceil(rest / plan.capacity) if rest else 0.0
    return Projection(node_seconds, source, canary_seconds, rollout_seconds)
