"""The gateway client's wire format against a loopback HTTP server replaying etcd 3.4.23 replies.

The replies below were captured from Debian's etcd 3.4.23; the integration test
(tests/integration/test_etcd_lab.py) runs the same client against real members over TLS.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ufcctl.engine.etcd_client import ClusterClient, EtcdError, Gateway, prefix_end

HEADER = {
    "cluster_id": "10291191283959966590",
    "member_id": "517730573628343671",
    "revision": "3",
    "raft_term": "2",
}
REPLIES: dict[str, Any] = {
    "/v3/maintenance/status": {
        "header": HEADER,
        "version": "3.4.23",
        "dbSize": "20480",
        "leader": "8627922443212651611",
        "raftIndex": "9",
        "raftTerm": "2",
        "raftAppliedIndex": "9",
        "dbSizeInUse": "16384",
    },
    "/v3/cluster/member/list": {
        "header": HEADER,
        "members": [
            {
                "ID": "517730573628343671",
                "name": "m1",
                "peerURLs": ["https://127.0.0.1:12380"],
                "clientURLs": ["http://127.0.0.1:PORT"],
            },
            {
                "ID": "8627922443212651611",
                "name": "",
                "peerURLs": ["https://127.0.0.1:32380"],
                "isLearner": True,
            },
        ],
    },
    "/v3/maintenance/alarm": {
        "header": HEADER,
        "alarms": [{"memberID": "517730573628343671", "alarm": "NOSPACE"}],
    },
    "/v3/lease/grant": {"header": HEADER, "ID": "393961618413265158", "TTL": "30"},
    "/v3/lease/keepalive": '{"result":{"header":{},"ID":"393961618413265158","TTL":"30"}}\n',
    "/v3/kv/txn": {
        "header": HEADER,
        "responses": [
            {
                "response_range": {
                    "header": {"revision": "2"},
                    "kvs": [
                        {
                            "key": "L2xvY2s=",
                            "create_revision": "2",
                            "mod_revision": "2",
                            "version": "1",
                            "value": "bWU=",
                            "lease": "393961618413265160",
                        }
                    ],
                    "count": "1",
                }
            }
        ],
    },
    "/v3/kv/range": {
        "header": HEADER,
        "kvs": [{"key": base64.b64encode(b"/a/x").decode(), "value": base64.b64encode(b"1").decode()}],
        "count": "7",
    },
    "/v3/kv/compaction": {
        "error": "etcdserver: mvcc: required revision has been compacted",
        "message": "etcdserver: mvcc: required revision has been compacted",
        "code": 11,
    },
    "/v3/maintenance/defragment": {},
    "/health": {"health": "true"},
}


class _Handler(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, Any]] = []

    def _reply(self, body: Any) -> None:
        text = (
            body if isinstance(body, str) else json.dumps(body).replace("PORT", str(self.server.server_port))
        )
        self.send_response(404 if text.startswith("404") else 200)
        self.end_headers()
        self.wfile.write(text.encode())

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("Content-Length", 0))
        self.seen.append(("POST", self.path, json.loads(self.rfile.read(length) or b"{}")))
        self._reply(REPLIES.get(self.path, "404 page not found"))

    def do_GET(self) -> None:  # noqa: N802
        self.seen.append(("GET", self.path, None))
        self._reply(REPLIES[self.path])

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def gateway() -> Iterator[Gateway]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Handler.seen = []
    yield Gateway(f"http://127.0.0.1:{server.server_port}", None, timeout=5)
    server.shutdown()


def test_status_and_members_decode_uint64_strings(gateway: Gateway) -> None:
    status = gateway.status()
    assert (status.member_id, status.leader_id, status.db_size, status.db_size_in_use, status.revision) == (
        "517730573628343671",
        "8627922443212651611",
        20480,
        16384,
        3,
    )
    assert not status.is_leader
    members = gateway.members()
    assert [(m.name, m.is_learner) for m in members] == [("m1", False), ("", True)]
    assert members[1].endpoint == ""


def test_lock_transaction_request_and_reply(gateway: Gateway) -> None:
    created, holder = gateway.create("/lock", "you", "393961618413265158")
    assert (created, holder) == (False, "me")
    method, path, body = _Handler.seen[-1]
    assert path == "/v3/kv/txn"
    assert body["compare"] == [{"target": "CREATE", "key": "L2xvY2s=", "createRevision": "0"}]
    assert body["success"][0]["requestPut"] == {
        "key": "L2xvY2s=",
        "value": "eW91",
        "lease": "393961618413265158",
    }


def test_keepalive_stream_reply_and_lease(gateway: Gateway) -> None:
    assert gateway.lease_grant(30) == "393961618413265158"
    assert _Handler.seen[-1][2] == {"TTL": "30"}
    assert gateway.lease_keepalive("393961618413265158") == 30


def test_grpc_errors_become_etcd_errors(gateway: Gateway) -> None:
    with pytest.raises(EtcdError) as info:
        gateway.compact(2)
    assert info.value.compacted and info.value.code == 11
    assert _Handler.seen[-1][2] == {"revision": "2", "physical": True}


def test_http_404_names_the_path(gateway: Gateway) -> None:
    with pytest.raises(EtcdError, match="HTTP 404 on /v3/kv/put"):
        gateway.put("/x", "y")


def test_prefix_ranges(gateway: Gateway) -> None:
    assert gateway.count_prefix("/registry/pods/") == 7
    body = _Handler.seen[-1][2]
    assert base64.b64decode(body["key"]) == b"/registry/pods/"
    assert base64.b64decode(body["range_end"]) == b"/registry/pods0"
    assert body["count_only"] is True
    assert gateway.get_prefix("/a/") == {"/a/x": "1"}


@pytest.mark.parametrize(
    ("prefix", "end"),
    [
        pytest.param("/registry/events/", b"/registry/events0", id="slash-to-zero"),
        pytest.param(b"a\xff", b"b", id="carry-over-0xff"),
        pytest.param(b"\xff\xff", b"\0", id="all-0xff-means-every-key"),
    ],
)
def test_prefix_end(prefix: str | bytes, end: bytes) -> None:
    assert base64.b64decode(prefix_end(prefix)) == end


def test_cluster_view_uses_member_list_and_reports_unreachable(gateway: Gateway) -> None:
    client = ClusterClient("core", [gateway.endpoint, "http://127.0.0.1:1"], None, timeout=2)
    view = client.view()
    assert [m.name for m in view.members] == ["m1", ""]
    assert list(view.statuses) == ["m1"]
    assert view.nospace and view.alarm_names == ("NOSPACE",)
    assert view.last == {}  # the range reply holds no valid record


def test_unreachable_endpoints_fall_through_then_fail() -> None:
    client = ClusterClient("core", ["http://127.0.0.1:1", "http://127.0.0.1:2"], None, timeout=1)
    with pytest.raises(EtcdError, match="no endpoint answered: http://127.0.0.1:1: connection refused"):
        client.first("status")


@pytest.mark.parametrize(
    "endpoint", ["127.0.0.1:2379", "ftp://x:1", "https://", "https://10.0.0.1", "https://x:99999", "https://x:a"]
)
def test_bad_endpoints_are_rejected(endpoint: str) -> None:
    with pytest.raises(EtcdError, match="endpoint must be https://HOST:PORT"):
        Gateway(endpoint, None)


def test_https_needs_tls_files() -> None:
    with pytest.raises(EtcdError, match="needs CA, certificate and key"):
        Gateway("https://10.0.0.1:2379", None)


def test_snapshot_decodes_the_streamed_messages_and_stops_at_an_error() -> None:
    from tests.helpers.raw_http import raw_server

    def message(blob: bytes) -> bytes:
        result = {"blob": base64.b64encode(blob).decode(), "remaining_bytes": "1"}
        return json.dumps({"result": result}).encode()

    head = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
    good = head + message(b"abc") + b"\n" + message(b"def") + b"\n"
    with raw_server(lambda path: ([good], 0.0)) as base:
        out: list[bytes] = []
        assert Gateway(base, None).snapshot(out.append) == 6
    assert out == [b"abc", b"def"]
    bad = head + message(b"abc") + b"\n" + b'{"error": {"grpc_code": 14, "message": "leader changed"}}\n'
    with raw_server(lambda path: ([bad], 0.0)) as base:
        with pytest.raises(EtcdError) as caught:
            Gateway(base, None).snapshot(lambda data: None)
    assert caught.value.code == 14 and "snapshot: leader changed" in str(caught.value)
