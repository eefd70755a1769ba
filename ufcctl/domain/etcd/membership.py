"""Joining a member to a running cluster: add it, reuse an earlier unfinished add, or refuse.

The role never re-initialises a cluster: a member without data joins the running cluster with
`--initial-cluster-state existing`, and a member that the cluster already knows by name but that
lost its data is refused (it must be removed first; etcd would otherwise reject it or, worse,
start it with a stale identity).

Also leaving a cluster (`plan_leave`, for remove-nodes --control-plane): only from a healthy cluster,
never its last member, a leader hands over first.

Standard library only (and ufcctl.domain.etcd.defrag): shipped to etcd nodes with the agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.etcd.defrag import ClusterView, Member, health_problems, status_errors


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


@dataclass(frozen=True)
class LeavePlan:
    """What `ufcctl-etcd-member --leave` does for member `name` (remove-nodes --control-plane)."""

    action: str  # absent (not a member: nothing to do), refuse, remove
    reason: str
    member_id: str = ""  # the member to remove (decimal string, as the gateway lists it)
    heir: str | None = None  # the member leadership moves to first (when `name` leads)


def plan_leave(view: ClusterView, name: str) -> LeavePlan:
    """Whether member `name` may leave its cluster now, and how: only from a healthy cluster (every
    member answering under one leader, no alarm but NOSPACE), never its last member (a cluster of 0 has
    no data), and a leader hands leadership to the most up-to-date other member first."""
    member = view.member(name)
    if member is None:
        return LeavePlan("absent", f"{name} is not a member of cluster {view.cluster} (removed already)")
    problems = health_problems(view)
    if problems:
        return LeavePlan("refuse", f"cluster {view.cluster} is not healthy: {'; '.join(problems)}")
    if len(view.members) < 2:
        return LeavePlan("refuse", f"{name} is the last member of cluster {view.cluster}: its removal would "
                                   "leave the cluster with no member")
    heir = None
    if view.leader == name:
        heir = max((s.raft_index, n) for n, s in view.statuses.items() if n != name)[1]
    return LeavePlan("remove", f"{len(view.members) - 1} member(s) stay", member.member_id, heir)


@dataclass(frozen=True)
class ReplaceTarget:
    """The listed member `ufcctl etcd member replace` would stop and remove, or why none may be."""

    listed: Member | None  # None: the cluster does not list it (its data is aside, it joins fresh)
    refusal: str = ""


def _norm(urls: Sequence[str]) -> set[str]:
    return {u.rstrip("/") for u in urls}


def plan_replace(view: ClusterView, host: str, client_url: str, peer_url: str) -> ReplaceTarget:
    """Which member of `view` is inventory host `host` (name, client URL `client_url`, peer URL
    `peer_url`): by name and by URL, since a host renamed in the inventory keeps its address and its
    member keeps the old name. Refused: names that disagree (the URL's member is named otherwise, or the
    named member sits at other URLs), and a member that is healthy however it was found."""
    urls = {client_url.rstrip("/"), peer_url.rstrip("/")}
    at_url = [m for m in view.members if urls & (_norm(m.client_urls) | _norm(m.peer_urls))]
    named = view.member(host)
    for member in at_url:
        if member.name and member.name != host:
            return ReplaceTarget(member, f"the member at {', '.join(sorted(urls))} is named {member.name} in "
                                         f"cluster {view.cluster}, not {host} as in the inventory")
    if named is not None and at_url and named not in at_url:
        where = ", ".join(named.client_urls + named.peer_urls)
        return ReplaceTarget(named, f"member {host} of cluster {view.cluster} is at {where}, not at the "
                                    f"inventory's {', '.join(sorted(urls))}")
    listed = named or (at_url[0] if at_url else None)
    if listed is not None:
        for status in view.statuses.values():
            if status.member_id == listed.member_id and not status_errors(status):
                return ReplaceTarget(listed, f"member {listed.name or host} of etcd cluster {view.cluster} "
                                             "is healthy: replace only a dead or broken member")
    return ReplaceTarget(listed)
