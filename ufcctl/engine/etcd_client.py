"""Client for etcd's v3 JSON gateway over HTTPS with client certificates (the one implementation).

Used by ufcctl on the controller and, as a shipped copy, by the defrag agent on etcd nodes, so
it uses the standard library only. Endpoints were checked against etcd 3.4.23 (Debian bookworm):
/v3/maintenance/{status,defragment,alarm,transfer-leadership}, /v3/kv/{range,put,deleterange,txn,
compaction}, /v3/lease/{grant,keepalive,revoke}, /v3/cluster/member/list and GET /health.
The gateway encodes keys and values as base64 and 64-bit integers as decimal strings; that encoding and
the reading of its answers into the domain's types are etcd_wire.py, this module is the calls.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ufcctl.domain.etcd.defrag import Alarm, ClusterView, LastDefrag, Member, MemberStatus, last_prefix
from ufcctl.domain.urls import mask
from ufcctl.engine import etcd_wire as wire
from ufcctl.engine.etcd_wire import b64, prefix_end, unb64
from ufcctl.engine.http_get import HttpError, stream_lines
from ufcctl.engine.http_get import request as http_request

DEFAULT_TIMEOUT = 10.0
# A defrag rewrites the whole bbolt file; etcd's docs give no bound. 8 GiB at ~100 MB/s is ~80 s,
# so 10 minutes leaves room for slow disks without hanging a timer run forever.
DEFRAG_TIMEOUT = 600.0
GRPC_COMPACTED = 11  # OutOfRange: "required revision has been compacted"
GRPC_UNAVAILABLE = 14
# The largest gateway answer read. etcd caps a request at 1.5 MiB (--max-request-bytes) but not a
# range answer; ufcctl reads member lists, statuses and its own few defrag records, kilobytes.
MAX_ANSWER = 64 << 20
# A snapshot streams the whole backend (up to the 8 GiB quota) in 32 KiB messages (base64 in JSON,
# ~44 KiB a line): 1 MiB bounds a line; an hour bounds the transfer (8 GiB at 2.3 MB/s).
SNAPSHOT_LINE = 1 << 20
SNAPSHOT_TIMEOUT = 3600.0
T = TypeVar("T")


class EtcdError(Exception):
    """A failed gateway call: which endpoint, what etcd said, and its gRPC/HTTP code when there is one."""

    def __init__(self, endpoint: str, message: str, code: int | None = None):
        super().__init__(f"{mask(endpoint)}: {message}")
        self.endpoint = mask(endpoint)
        self.message = message
        self.code = code

    @property
    def compacted(self) -> bool:
        return self.code == GRPC_COMPACTED and "compacted" in self.message


@dataclass(frozen=True)
class TlsFiles:
    ca: str
    cert: str
    key: str


class Gateway:
    """One etcd member's client endpoint."""

    def __init__(self, endpoint: str, tls: TlsFiles | None, timeout: float = DEFAULT_TIMEOUT):
        self.endpoint = endpoint.rstrip("/")
        url = urllib.parse.urlsplit(self.endpoint)
        try:
            port = url.port
        except ValueError:  # not a number, or out of range
            port = None
        # the port is always explicit: client URLs come from the member list or from the topology
        # (domain/etcd/topology.py), so no default port is assumed here
        if url.scheme not in ("https", "http") or not url.hostname or port is None:
            raise EtcdError(endpoint, "endpoint must be https://HOST:PORT")
        self._host = url.hostname
        self._port = port
        self._tls = url.scheme == "https"
        self.timeout = timeout
        self._context: ssl.SSLContext | None = None
        if self._tls:
            if tls is None:
                raise EtcdError(endpoint, "https endpoint needs CA, certificate and key files")
            try:
                context = ssl.create_default_context(cafile=tls.ca)
                context.load_cert_chain(tls.cert, tls.key)
            except (OSError, ValueError) as err:  # a damaged CA or key on the controller (ssl.SSLError)
                raise EtcdError(endpoint, f"cannot load ufcctl's CA or client certificate ({tls.ca}, "
                                          f"{tls.cert}): {err}") from None
            self._context = context

    def request(
        self, method: str, path: str, body: dict[str, Any] | None, timeout: float | None = None
    ) -> str:
        """One call; `timeout` (default: the gateway's) bounds the whole exchange, answer capped."""
        payload = None if body is None else json.dumps(body).encode()
        try:
            answer = http_request(
                self.endpoint + path, method=method, body=payload,
                headers={"Content-Type": "application/json"},
                deadline=timeout or self.timeout, max_bytes=MAX_ANSWER, context=self._context,
            )
        except HttpError as err:  # refused, timeout, TLS failure, too big, redirected elsewhere
            raise EtcdError(self.endpoint, err.reason) from err
        text = answer.body.decode("utf-8", errors="replace")
        if answer.status >= 400 and not text.startswith("{"):
            raise EtcdError(
                self.endpoint, f"HTTP {answer.status} on {path}: {text.strip()[:200]}", answer.status
            )
        return text

    def _shaped(self, path: str, read: Callable[[], T]) -> T:
        """`read()` of an answer, whose fields of the wrong type become one EtcdError, not a traceback."""
        try:
            return read()
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
            reason = f"unexpected answer from /v3/{path}: {type(err).__name__}: {err}"
            raise EtcdError(self.endpoint, reason) from err

    def call(
        self, path: str, body: dict[str, Any] | None = None, timeout: float | None = None
    ) -> dict[str, Any]:
        """POST /v3/<path> and return the decoded reply; gRPC errors become EtcdError."""
        text = self.request("POST", f"/v3/{path}", body or {}, timeout)
        # streaming RPCs (lease keepalive) answer one JSON object per line: the first is ours
        first = text.strip().splitlines()[0] if text.strip() else "{}"
        try:
            data = json.loads(first)
        except ValueError as err:
            raise EtcdError(self.endpoint, f"not JSON from /v3/{path}: {first[:200]}") from err
        if not isinstance(data, dict):
            raise EtcdError(self.endpoint, f"not a JSON object from /v3/{path}: {first[:200]}")
        if "error" in data:
            error = data["error"]
            if isinstance(error, dict):  # streaming error shape
                raise EtcdError(self.endpoint, str(error.get("message")), error.get("grpc_code"))
            raise EtcdError(self.endpoint, str(data.get("message") or error), data.get("code"))
        return data.get("result", data) if "result" in data else data

    def snapshot(self, write: Callable[[bytes], None], timeout: float = SNAPSHOT_TIMEOUT) -> int:
        """Stream this member's backend to `write` (etcd's Snapshot RPC: the bbolt file followed by the
        sha256 of it, what `etcdctl snapshot save` stores); returns the bytes written."""
        total = 0

        def line(raw: bytes) -> None:
            nonlocal total
            if not raw.strip():
                return
            try:
                data = json.loads(raw)
                if "error" in data:
                    error = data["error"]
                    raise EtcdError(self.endpoint, f"snapshot: {error.get('message', error)}",
                                    error.get("grpc_code") if isinstance(error, dict) else None)
                blob = base64.b64decode(data.get("result", data).get("blob") or "", validate=True)
            except (ValueError, TypeError, AttributeError) as err:
                raise EtcdError(self.endpoint, f"snapshot: unexpected message: {err}") from err
            write(blob)
            total += len(blob)

        try:
            stream_lines(self.endpoint + "/v3/maintenance/snapshot", line, deadline=timeout,
                         max_line=SNAPSHOT_LINE, body=b"{}", headers={"Content-Type": "application/json"},
                         context=self._context)
        except HttpError as err:
            raise EtcdError(self.endpoint, err.reason) from err
        return total

    # --- health and maintenance -------------------------------------------------------------
    def health(self) -> bool:
        text = self.request("GET", "/health", None)
        try:
            data = json.loads(text)
        except ValueError:
            return False
        return isinstance(data, dict) and data.get("health") == "true"

    def status(self) -> MemberStatus:
        data = self.call("maintenance/status")
        return self._shaped("maintenance/status", lambda: wire.status(data))

    def members(self) -> list[Member]:
        data = self.call("cluster/member/list")
        return self._shaped("cluster/member/list", lambda: wire.members(data))

    def member_add(self, peer_url: str) -> list[dict[str, Any]]:
        """Add a member by its peer URL; returns the new member list (the new one has no name yet)."""
        return list(self.call("cluster/member/add", {"peerURLs": [peer_url]}).get("members", ()))

    def member_remove(self, member_id: str) -> None:
        """Remove a member by its id (the decimal string of the member list)."""
        self.call("cluster/member/remove", {"ID": member_id})

    def member_list_raw(self) -> list[dict[str, Any]]:
        return list(self.call("cluster/member/list").get("members", ()))

    def alarms(self) -> list[Alarm]:
        data = self.call("maintenance/alarm", {"action": "GET"})
        return self._shaped("maintenance/alarm", lambda: wire.alarms(data))

    def disarm(self, alarm: Alarm) -> None:
        self.call(
            "maintenance/alarm", {"action": "DEACTIVATE", "memberID": alarm.member_id, "alarm": alarm.alarm}
        )

    def compact(self, revision: int) -> None:
        # physical: return only once the compaction is applied to the backend, so the defrag
        # that follows can reclaim the pages it freed.
        self.call("kv/compaction", {"revision": str(revision), "physical": True})

    def defragment(self, timeout: float = DEFRAG_TIMEOUT) -> None:
        self.call("maintenance/defragment", {}, timeout=timeout)

    def move_leader(self, target_id: str) -> None:
        """Hand leadership to `target_id`; only the current leader accepts this."""
        self.call("maintenance/transfer-leadership", {"targetID": target_id})

    # --- leases and keys ---------------------------------------------------------------------
    def lease_grant(self, ttl: int) -> str:
        return str(self.call("lease/grant", {"TTL": str(ttl)})["ID"])

    def lease_keepalive(self, lease_id: str) -> int:
        """Refresh a lease once; returns the new TTL (0 or less: the lease is gone)."""
        return int(self.call("lease/keepalive", {"ID": lease_id}).get("TTL", 0))

    def lease_revoke(self, lease_id: str) -> None:
        self.call("lease/revoke", {"ID": lease_id})

    def put(self, key: str, value: str, lease_id: str | None = None) -> int:
        """Returns the revision the write created (answered once the serving member applied it)."""
        body: dict[str, Any] = {"key": b64(key), "value": b64(value)}
        if lease_id:
            body["lease"] = lease_id
        return int(self.call("kv/put", body).get("header", {}).get("revision", 0))

    def get(self, key: str) -> str | None:
        kvs = self.call("kv/range", {"key": b64(key)}).get("kvs", ())
        return unb64(kvs[0].get("value", "")) if kvs else None

    def get_prefix(self, prefix: str) -> dict[str, str]:
        data = self.call("kv/range", {"key": b64(prefix), "range_end": prefix_end(prefix)})
        return {unb64(kv["key"]): unb64(kv.get("value", "")) for kv in data.get("kvs", ())}

    def count_prefix(self, prefix: str) -> int:
        data = self.call(
            "kv/range", {"key": b64(prefix), "range_end": prefix_end(prefix), "count_only": True}
        )
        return int(data.get("count", 0))

    def delete_prefix(self, prefix: str) -> int:
        data = self.call("kv/deleterange", {"key": b64(prefix), "range_end": prefix_end(prefix)})
        return int(data.get("deleted", 0))

    def create(self, key: str, value: str, lease_id: str) -> tuple[bool, str | None]:
        """Put `key` only if it does not exist; returns (created, current value when not created)."""
        data = self.call(
            "kv/txn",
            {
                "compare": [{"target": "CREATE", "key": b64(key), "createRevision": "0"}],
                "success": [{"requestPut": {"key": b64(key), "value": b64(value), "lease": lease_id}}],
                "failure": [{"requestRange": {"key": b64(key)}}],
            },
        )
        if data.get("succeeded"):
            return True, None
        responses = data.get("responses") or [{}]
        kvs = responses[0].get("response_range", {}).get("kvs", ())
        return False, unb64(kvs[0].get("value", "")) if kvs else None

    def delete_if_value(self, key: str, value: str) -> bool:
        """Delete `key` only while it still holds `value` (release a lock we own, never another's)."""
        data = self.call(
            "kv/txn",
            {
                "compare": [{"target": "VALUE", "key": b64(key), "value": b64(value)}],
                "success": [{"requestDeleteRange": {"key": b64(key)}}],
            },
        )
        return bool(data.get("succeeded"))


class ClusterClient:
    """All members of one cluster: gateways by endpoint, and a snapshot of the whole cluster."""

    def __init__(
        self, cluster: str, endpoints: Sequence[str], tls: TlsFiles | None, timeout: float = DEFAULT_TIMEOUT
    ):
        if not endpoints:
            raise EtcdError(cluster, "no endpoints")
        self.cluster = cluster
        self.endpoints = list(endpoints)
        self.tls = tls
        self.timeout = timeout
        self._gateways: dict[str, Gateway] = {}

    def gateway(self, endpoint: str) -> Gateway:
        if endpoint not in self._gateways:
            self._gateways[endpoint] = Gateway(endpoint, self.tls, self.timeout)
        return self._gateways[endpoint]

    def first(self, call: str, *args: Any, avoid: str | None = None, **kwargs: Any) -> Any:
        """Run one Gateway method on the first endpoint that answers (skipping `avoid` if others exist)."""
        order = [e for e in self.endpoints if e != avoid] + [e for e in self.endpoints if e == avoid]
        errors = []
        for endpoint in order:
            try:
                return getattr(self.gateway(endpoint), call)(*args, **kwargs)
            except EtcdError as err:
                # only a transport failure or gRPC Unavailable (14) is worth another member;
                # any other answer is etcd's verdict and would be the same elsewhere
                if err.code is not None and err.code != GRPC_UNAVAILABLE:
                    raise
                errors.append(str(err))
        raise EtcdError(self.cluster, "no endpoint answered: " + "; ".join(errors))

    def view(self, with_last: bool = True) -> ClusterView:
        """Member list, every member's status, alarms and last-defrag records, as one snapshot."""
        members = tuple(self.first("members"))
        if members and all(m.endpoint for m in members):
            # the member list is the truth: a member added since the config was written is included
            self.endpoints = [m.endpoint for m in members if m.endpoint]
        statuses: dict[str, MemberStatus] = {}
        unreachable: dict[str, str] = {}
        for member in members:
            if not member.name or not member.endpoint:
                continue
            try:
                statuses[member.name] = self.gateway(member.endpoint).status()
            except EtcdError as err:
                unreachable[member.name] = err.message
        alarms = tuple(self.first("alarms"))
        last: dict[str, LastDefrag] = {}
        if with_last:
            prefix = last_prefix(self.cluster)
            for key, value in self.first("get_prefix", prefix).items():
                record = LastDefrag.from_json(value)
                if record is not None:
                    last[key[len(prefix) :]] = record
        return ClusterView(self.cluster, members, statuses, unreachable, alarms, last)
