"""The node's join command: member add retried while etcd's strict reconfiguration check refuses."""

from __future__ import annotations

from typing import Any

import pytest

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
