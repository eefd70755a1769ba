"""What goes over the wire to etcd's v3 JSON gateway (etcd_client.py makes the calls): keys and values
as base64, a prefix's range end, and the answers read into the domain's types, each field checked for
its shape (a member that answers something else is an error, never a wrong number).

Node-side too (ufcctl/nodeside imports etcd_client): the standard library and the allowed domain modules
only (tests/unit/test_layers.py NODESIDE_ALLOWED).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ufcctl.domain.etcd.defrag import Alarm, Member, MemberStatus


def b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode("ascii")


def unb64(text: str) -> str:
    return base64.b64decode(text).decode("utf-8", errors="replace")


def prefix_end(prefix: str | bytes) -> str:
    """The range end (base64) covering every key that starts with `prefix` (etcd's GetPrefixRangeEnd)."""
    raw = bytearray(prefix.encode() if isinstance(prefix, str) else prefix)
    for i in range(len(raw) - 1, -1, -1):
        if raw[i] < 0xFF:
            raw[i] += 1
            return b64(bytes(raw[: i + 1]))
    return b64(b"\0")  # every key


def status(data: dict[str, Any]) -> MemberStatus:
    header = data.get("header", {})
    if not isinstance(header, dict):
        raise TypeError(f"header is {type(header).__name__}, not an object")
    return MemberStatus(
        member_id=str(header.get("member_id", "")),
        leader_id=str(data.get("leader", "")),
        db_size=_int(data, "dbSize"),
        db_size_in_use=_int(data, "dbSizeInUse"),
        revision=_int(header, "revision"),
        raft_term=_int(data, "raftTerm"),
        raft_index=_int(data, "raftIndex"),
        version=str(data.get("version", "")),
        errors=tuple(str(e) for e in _sequence(data.get("errors", ()))),
    )


def _int(data: dict[str, Any], key: str) -> int:
    """A 64-bit field: the gateway sends a decimal string (or a number); anything else is an error."""
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"{key} is {type(value).__name__}, not a number")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{key} {str(value)[:40]!r} is not a number") from None


def _list(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, dict) for v in value):
        raise TypeError(f"expected a list of objects, got {json.dumps(value)[:80]}")
    return list(value)


def _sequence(value: Any) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise TypeError(f"expected a list, got {json.dumps(value)[:80]}")
    return list(value)


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"expected a list of strings, got {json.dumps(value)[:80]}")
    return list(value)


def members(data: dict[str, Any]) -> list[Member]:
    """cluster/member/list's members."""
    return [
        Member(
            str(m.get("ID", "")),
            str(m.get("name", "")),
            tuple(_strings(m.get("clientURLs", ()))),
            bool(m.get("isLearner", False)),
            tuple(_strings(m.get("peerURLs", ()))),
        )
        for m in _list(data.get("members", ()))
    ]


def alarms(data: dict[str, Any]) -> list[Alarm]:
    """maintenance/alarm's alarms."""
    return [Alarm(str(a.get("memberID", "0")), str(a.get("alarm", "NONE")))
            for a in _list(data.get("alarms", ()))]
