"""A small client of VictoriaMetrics' Prometheus-compatible query API (GET /api/v1/query)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ufcctl.domain.monitoring.health import Sample

# The instant-query endpoint VictoriaMetrics serves like Prometheus
# (https://docs.victoriametrics.com/victoriametrics/url-examples/#apiv1query).
QUERY_PATH = "/api/v1/query"


class VictoriaError(Exception):
    """A query that got no usable answer; `url` is what was asked and `reason` what went wrong."""

    def __init__(self, url: str, reason: str):
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason


def query_url(base_url: str) -> str:
    return base_url.rstrip("/") + QUERY_PATH


def query(base_url: str, expr: str, timeout: float) -> list[Sample]:
    """The samples of an instant query; VictoriaError when the server cannot be asked or answers badly.

    `timeout` bounds the connection and each read (urllib's per-socket-operation timeout).
    """
    url = query_url(base_url)
    full = url + "?" + urllib.parse.urlencode({"query": expr})
    request = urllib.request.Request(full, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as err:
        raise VictoriaError(url, f"HTTP {err.code} {err.reason}{_error_text(err)}") from err
    except urllib.error.URLError as err:
        raise VictoriaError(url, _reason(err.reason, timeout)) from err
    except TimeoutError as err:
        raise VictoriaError(url, f"no answer within {timeout:g} s") from err
    except OSError as err:
        raise VictoriaError(url, _reason(err, timeout)) from err
    return _samples(url, expr, body)


def _reason(reason: object, timeout: float) -> str:
    if isinstance(reason, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    return str(reason)


def _error_text(err: urllib.error.HTTPError) -> str:
    """VictoriaMetrics explains a bad query in the body's `error` field; keep one short line of it."""
    try:
        data = json.loads(err.read() or b"{}")
    except (ValueError, OSError):
        return ""
    message = data.get("error") if isinstance(data, dict) else None
    return f": {str(message).splitlines()[0][:200]}" if message else ""


def _samples(url: str, expr: str, body: bytes) -> list[Sample]:
    try:
        data: Any = json.loads(body)
    except ValueError as err:
        raise VictoriaError(url, f"answer to {expr!r} is not JSON: {err}") from err
    if not isinstance(data, dict) or data.get("status") != "success":
        status = data.get("status") if isinstance(data, dict) else None
        error = data.get("error") if isinstance(data, dict) else None
        raise VictoriaError(url, f"query {expr!r}: status {status!r}" + (f": {error}" if error else ""))
    try:
        kind = data["data"]["resultType"]
        result = data["data"]["result"]
        if kind == "vector":
            return [Sample(dict(r["metric"]), float(r["value"][1])) for r in result]
        if kind == "scalar":
            return [Sample({}, float(result[1]))]
    except (KeyError, IndexError, TypeError, ValueError) as err:
        raise VictoriaError(url, f"answer to {expr!r} is not a Prometheus query result: {err!r}") from err
    raise VictoriaError(url, f"answer to {expr!r}: unexpected result type {kind!r}")
