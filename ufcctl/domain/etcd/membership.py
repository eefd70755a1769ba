"""Joining a member to a running cluster: add it, reuse an earlier unfinished add, or refuse.

The role never re-initialises a cluster: a member without data joins the running cluster with
`--initial-cluster-state existing`, and a member that the cluster already knows by name but that
lost its data is refused (it must be removed first; etcd would otherwise reject it or, worse,
start it with a stale identity).

Standard library only: shipped to etcd nodes with the agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JoinPlan:
    action: str  # add, reuse (added earlier, never started), refuse
    reason: str


def plan_join(members: Sequence[Mapping[str, Any]], name: str, peer_url: str) -> JoinPlan:
    """What to do for member `name` (peer URL `peer_url`) given the running cluster's member list."""
    for member in members:
        peers = list(member.get("peerURLs", ()))
        if member.get("name") == name:
            return JoinPlan(
                "refuse",
                f"member {name} (id {member.get('ID')}) is already in the cluster but has no data here: "
                f"remove it first (etcdctl member remove {int(member.get('ID', 0)):x}), then rerun",
            )
        if peer_url in peers:
            if member.get("name"):
                return JoinPlan("refuse", f"peer URL {peer_url} belongs to member {member.get('name')}")
            return JoinPlan("reuse", f"{peer_url} was added before but never started")
    return JoinPlan("add", f"{name} is not a member yet")


def initial_cluster(members: Sequence[Mapping[str, Any]], name: str, peer_url: str) -> str:
    """--initial-cluster for a joining member: every started member plus itself, name=peerURL."""
    entries = []
    for member in members:
        peers = list(member.get("peerURLs", ()))
        if peer_url in peers:
            entries.append(f"{name}={peer_url}")
        elif member.get("name"):
            entries.extend(f"{member['name']}={p}" for p in peers)
    if f"{name}={peer_url}" not in entries:
        entries.append(f"{name}={peer_url}")
    return ",".join(entries)
