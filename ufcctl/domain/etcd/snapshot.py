"""One cluster's snapshot put together from what each member endpoint answered on its own.

`ufcctl etcd status` asks every endpoint at once (ufcctl/engine/etcd_probe.py) and every endpoint
answers, fails or runs out of time independently; this module turns those answers into the
ClusterView the health rules read, without asking anything again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ufcctl.domain.etcd.defrag import Alarm, ClusterView, LastDefrag, Member, MemberStatus


@dataclass(frozen=True)
class EndpointProbe:
    """What one endpoint answered: its own status, and the cluster-wide lists it served."""

    cluster: str
    endpoint: str
    status: MemberStatus | None = None
    members: tuple[Member, ...] | None = None
    alarms: tuple[Alarm, ...] | None = None
    last: Mapping[str, LastDefrag] | None = None  # by member name
    error: str | None = None  # why the endpoint did not answer (everything it did answer is kept)
    seconds: float = 0.0


@dataclass(frozen=True)
class Assembled:
    view: ClusterView | None  # None: no endpoint returned the member list
    # client URLs of listed members that no probe asked (added since the inventory was written)
    unprobed: tuple[str, ...] = ()
    errors: Mapping[str, str] = field(default_factory=dict)  # endpoint -> why it did not answer
    alarms_read: bool = True  # False: no endpoint returned the alarm list (the view shows none)


def _first(probes: Sequence[EndpointProbe], attribute: str) -> object:
    return next((getattr(p, attribute) for p in probes if getattr(p, attribute) is not None), None)


def assemble(cluster: str, probes: Sequence[EndpointProbe]) -> Assembled:
    """The cluster's view from its probes (in configured order: the first member list wins)."""
    errors = {p.endpoint: p.error for p in probes if p.error}
    members = _first(probes, "members")
    if not isinstance(members, tuple):
        return Assembled(None, (), errors)
    by_id = {p.status.member_id: p.status for p in probes if p.status is not None}
    by_url = {p.endpoint.rstrip("/"): p for p in probes}
    statuses: dict[str, MemberStatus] = {}
    unreachable: dict[str, str] = {}
    unprobed: list[str] = []
    for member in members:
        if not member.name:
            continue  # added but never started: health_problems says so
        if member.member_id in by_id:
            statuses[member.name] = by_id[member.member_id]
            continue
        asked = [by_url[u.rstrip("/")] for u in member.client_urls if u.rstrip("/") in by_url]
        if asked:
            unreachable[member.name] = asked[0].error or "no status"
        elif member.endpoint:
            unprobed.append(member.endpoint)
        else:
            unreachable[member.name] = "no client URL in the member list"
    alarms = _first(probes, "alarms")
    last = _first(probes, "last")
    view = ClusterView(
        cluster,
        members,
        statuses,
        unreachable,
        alarms if isinstance(alarms, tuple) else (),
        dict(last) if isinstance(last, Mapping) else {},
    )
    return Assembled(view, tuple(unprobed), errors, isinstance(alarms, tuple))
