"""Asking many etcd members at once: a loopback member that answers, one that black-holes (a listening
socket that never accepts), one that refuses, one that stalls half-way, and one whose thread never
returns. Every endpoint is reported; the elapsed times are hang guards, not speed assertions."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ufcctl.domain.etcd import snapshot
from ufcctl.domain.etcd.defrag import health_problems
from ufcctl.domain.etcd.snapshot import EndpointProbe
from ufcctl.engine import etcd_probe
from ufcctl.engine.etcd_probe import probe_all

TIMEOUT = 1.0
HANG_GUARD = TIMEOUT * 3 + 10


class _Member(BaseHTTPRequestHandler):
    """A member's JSON gateway: replies from server.replies; paths in server.stall wait for server.release."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        server: Any = self.server
        if self.path in server.stall:
            server.release.wait(30)
            return
        body = json.dumps(server.replies.get(self.path, {})).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def hole() -> Iterator[str]:
    """Accepts TCP connections into its backlog and never reads or answers them."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()


@pytest.fixture()
def member(hole: str) -> Iterator[ThreadingHTTPServer]:
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Member)
    server.daemon_threads = True
    url = f"http://127.0.0.1:{server.server_port}"
    refused = f"http://127.0.0.1:{_closed_port()}"
    header = {"member_id": "1", "revision": "9"}
    server.replies = {
        "/v3/maintenance/status": {"header": header, "leader": "1", "dbSize": "4096", "dbSizeInUse": "1024"},
        "/v3/cluster/member/list": {"header": header, "members": [
            {"ID": "1", "name": "m1", "clientURLs": [url]},
            {"ID": "2", "name": "m2", "clientURLs": [hole]},
            {"ID": "3", "name": "m3", "clientURLs": [refused]},
        ]},
        "/v3/maintenance/alarm": {"header": header, "alarms": [{"memberID": "2", "alarm": "NOSPACE"}]},
        "/v3/kv/range": {"header": header},
    }
    server.stall = set()
    server.release = threading.Event()
    server.refused = refused
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.release.set()
    server.shutdown()


def _url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_port}"


def test_every_endpoint_is_reported_within_the_timeout(member: Any, hole: str) -> None:
    targets = [("core", _url(member)), ("core", hole), ("core", member.refused)]
    answered: list[tuple[str, str]] = []
    started = time.monotonic()
    probes = probe_all(targets, None, TIMEOUT, lambda p: answered.append((p.cluster, p.endpoint)))
    assert time.monotonic() - started < HANG_GUARD
    assert sorted(answered) == sorted(targets)  # each once, as it came

    ok = probes[("core", _url(member))]
    assert ok.error is None and ok.status is not None and ok.status.member_id == "1"
    assert ok.members is not None and [m.name for m in ok.members] == ["m1", "m2", "m3"]
    assert ok.alarms is not None and [a.alarm for a in ok.alarms] == ["NOSPACE"]
    assert probes[("core", hole)].error == f"no answer within {TIMEOUT:g} s"
    assert probes[("core", hole)].status is None
    assert "connection refused" in (probes[("core", member.refused)].error or "")

    view = snapshot.assemble("core", [probes[t] for t in targets]).view
    assert view is not None and list(view.statuses) == ["m1"]
    assert view.unreachable == {"m2": f"no answer within {TIMEOUT:g} s", "m3": probes[targets[2]].error}
    problems = health_problems(view)
    assert any(p.startswith("member m2 unreachable") for p in problems)
    assert any(p.startswith("member m3 unreachable") for p in problems)


def test_a_member_that_stalls_half_way_keeps_what_it_answered(member: Any) -> None:
    member.stall = {"/v3/cluster/member/list"}
    started = time.monotonic()
    probe = probe_all([("core", _url(member))], None, TIMEOUT)[("core", _url(member))]
    assert time.monotonic() - started < HANG_GUARD
    assert probe.status is not None and probe.members is None
    assert probe.error == f"no answer within {TIMEOUT:g} s"


def test_a_thread_that_never_returns_is_abandoned_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolver hang ignores socket timeouts: the caller still gets an answer for the endpoint."""
    release = threading.Event()

    def stuck(cluster: str, endpoint: str, tls: object, timeout: float) -> EndpointProbe:
        release.wait(60)
        return EndpointProbe(cluster, endpoint)

    monkeypatch.setattr(etcd_probe, "probe_endpoint", stuck)
    started = time.monotonic()
    try:
        probes = probe_all([("pods", "https://etcd-pods1:2385")], None, TIMEOUT)
    finally:
        release.set()
    assert time.monotonic() - started < HANG_GUARD
    assert probes[("pods", "https://etcd-pods1:2385")].error == f"no answer within {TIMEOUT:g} s"
