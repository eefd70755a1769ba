"""A small client of VictoriaMetrics' Prometheus-compatible query API (GET /api/v1/query)."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from ufcctl.domain.monitoring.health import Sample
from ufcctl.domain.urls import mask
from ufcctl.engine.http_get import HttpError, request

# The instant-query endpoint VictoriaMetrics serves like Prometheus
# (https://docs.victoriametrics.com/victoriametrics/url-examples/#apiv1query).
QUERY_PATH = "/api/v1/query"
# The largest answer read: ufcctl's health queries answer a few KiB even at 16,000 nodes (one
# sample per etcd member or per node state); 64 MiB leaves room for any sane query and stops a
# wrong server from filling the controller's memory.
MAX_ANSWER = 64 << 20


class VictoriaError(Exception):
    """A query that got no usable answer; `url` is what was asked and `reason` what went wrong."""

    def __init__(self, url: str, reason: str):
        super().__init__(f"{mask(url)}: {reason}")
        self.url = mask(url)
        self.reason = reason


def query_url(base_url: str) -> str:
    return base_url.rstrip("/") + QUERY_PATH


def query(base_url: str, expr: str, timeout: float, max_bytes: int | None = None) -> list[Sample]:
    """The samples of an instant query; VictoriaError when the server cannot be asked or answers badly.

    `timeout` bounds the whole exchange (connect, request, headers and body: engine/http_get.py);
    an answer over `max_bytes` (default MAX_ANSWER) is refused.
    """
    url = query_url(base_url)
    full = url + "?" + urllib.parse.urlencode({"query": expr})
    try:
        answer = request(full, deadline=timeout, max_bytes=max_bytes or MAX_ANSWER,
                         headers={"Accept": "application/json"})
    except HttpError as err:
        raise VictoriaError(url, err.reason) from err
    if answer.status >= 400:
        raise VictoriaError(url, f"HTTP {answer.status} {answer.reason}{_error_text(answer.body)}")
    return _samples(url, expr, answer.body)


def _error_text(body: bytes) -> str:
    """VictoriaMetrics explains a bad query in the body's `error` field; keep one short line of it."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
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
    inner = data.get("data")
    kind = inner.get("resultType") if isinstance(inner, dict) else None
    result = inner.get("result") if isinstance(inner, dict) else None
    if kind == "vector" and isinstance(result, list):
        return [_sample(url, expr, item) for item in result]
    if kind == "scalar":
        return [Sample({}, _value(url, expr, result))]
    if kind == "vector":
        raise VictoriaError(url, f"answer to {expr!r}: data.result is {type(result).__name__}, not a list")
    raise VictoriaError(url, f"answer to {expr!r}: unexpected result type {kind!r}")


def _sample(url: str, expr: str, item: Any) -> Sample:
    labels = item.get("metric") if isinstance(item, dict) else None
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise VictoriaError(url, f"answer to {expr!r}: a sample's metric is not a map of label values")
    return Sample(dict(labels), _value(url, expr, item.get("value")))


def _value(url: str, expr: str, pair: Any) -> float:
    """A Prometheus [timestamp, "value"] pair's value; the value is a string (NaN and ±Inf included)."""
    if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str):
        try:
            return float(pair[1])
        except ValueError:
            pass
    shown = json.dumps(pair)[:80]
    raise VictoriaError(url, f"answer to {expr!r}: value {shown} is not a [time, \"number\"] pair")
