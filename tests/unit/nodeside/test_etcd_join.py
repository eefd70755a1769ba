"""The node's join command: member add retried while etcd's strict reconfiguration check refuses."""

from __future__ import annotations

from typing import Any

import pytest

from ufcctl.domain.etcd.defrag import ClusterView, Member, MemberStatus
from ufcctl.engine.etcd_client import EtcdError
from ufcctl.nodeside import etcd_join


class FakeClient:
    def __init__(self, failures: list[str]):
        self.failures = failures
        self.calls = 0

    def first(self, call: str, *args: Any) -> Any:
        assert call == "member_add"
        self.calls += 1
        if self.failures:
            raise EtcdError("cp1", self.failures.pop(0), 14)
        return [
            {"ID": "1", "name": "cp1", "peerURLs": ["https://a:2380"]},
            {"ID": "2", "peerURLs": list(args)},
        ]


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(etcd_join.time, "sleep", lambda seconds: None)


def test_add_retries_while_the_cluster_is_briefly_unhealthy() -> None:
    client = FakeClient(["etcdserver: unhealthy cluster", "etcdserver: unhealthy cluster"])
    members = etcd_join._add(client, "https://b:2380")  # type: ignore[arg-type]
    assert client.calls == 3 and members[1]["peerURLs"] == ["https://b:2380"]


def test_add_gives_up_on_other_errors_at_once() -> None:
    client = FakeClient(["etcdserver: peerURL exists"])
    with pytest.raises(EtcdError, match="peerURL exists"):
        etcd_join._add(client, "https://b:2380")  # type: ignore[arg-type]
    assert client.calls == 1


def test_add_gives_up_after_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(etcd_join, "ADD_RETRY_SECONDS", -1.0)
    client = FakeClient(["etcdserver: unhealthy cluster"] * 5)
    with pytest.raises(EtcdError, match="unhealthy cluster"):
        etcd_join._add(client, "https://b:2380")  # type: ignore[arg-type]
    assert client.calls == 1


# ---- --wait-settled (roles/etcd tasks/renew.yml, after each member's restart) ------------------------

def _view(leader_index: int, mine: int, *, down: bool = False, errors: tuple[str, ...] = ()) -> ClusterView:
    members = tuple(Member(str(i), f"cp{i}", (f"https://10.0.0.{i}:2379",)) for i in (1, 2, 3))
    statuses = {"cp1": MemberStatus("1", "1", 0, 0, 9, 2, leader_index, errors=errors),
                "cp2": MemberStatus("2", "1", 0, 0, 9, 2, mine)}
    if not down:
        statuses["cp3"] = MemberStatus("3", "1", 0, 0, 9, 2, leader_index)
    return ClusterView("core", members, statuses, {"cp3": "refused"} if down else {})


class Views:
    def __init__(self, views: list[ClusterView | None]):
        self.views = views

    def view(self, with_last: bool = True) -> ClusterView:
        view = self.views.pop(0) if len(self.views) > 1 else self.views[0]
        if view is None:
            raise EtcdError("core", "connection refused")
        return view


def test_wait_settled_waits_for_every_member_then_for_the_leaders_first_index() -> None:
    # cp2 restarting (no answer), cp3 down, the leader reporting an error, then settled with cp2 behind
    # the leader's index as first seen (100): done once cp2 reaches 100, not the later 140
    views = [None, _view(90, 0, down=True), _view(95, 0, errors=("NOSPACE",)), _view(100, 60), _view(120, 99),
             _view(140, 100)]
    client = Views(views)
    assert etcd_join.wait_settled(client, "cp2", timeout=5) is not None  # type: ignore[arg-type]
    assert client.views == [_view(140, 100)]


def test_wait_settled_gives_up_after_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    assert etcd_join.wait_settled(Views([_view(9, 9, down=True)]), "cp2", timeout=-1) is None  # type: ignore[arg-type]
