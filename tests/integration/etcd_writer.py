"""A paced etcd writer for the lab tests and the benchmark: keep-alive HTTPS puts spread over endpoints.

Every put is retried (on another endpoint) until etcd acknowledges it or a deadline passes; only
acknowledged puts are recorded, so a later read can prove that none was lost.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

from ufcctl.engine.etcd_client import TlsFiles


@dataclass
class WriterStats:
    acked: dict[str, str] = field(default_factory=dict)  # key -> value etcd acknowledged
    latencies: list[tuple[float, float]] = field(default_factory=list)  # (start time, seconds incl. retries)
    retries: int = 0
    failed: list[str] = field(default_factory=list)  # keys never acknowledged before the deadline
    started: float = 0.0
    stopped: float = 0.0

    @property
    def rate(self) -> float:
        return len(self.acked) / max(self.stopped - self.started, 1e-9)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class Writer:
    """`threads` threads, each owning one keep-alive connection per endpoint, together `rate` puts/s."""

    def __init__(
        self,
        endpoints: list[str],
        tls: TlsFiles,
        prefix: str,
        rate: float = 250.0,
        threads: int = 6,
        value_bytes: int = 256,
        retry_seconds: float = 60.0,
    ):
        self.endpoints = endpoints
        self.prefix = prefix
        self.rate = rate
        self.threads = threads
        self.value = "v" * value_bytes
        self.retry_seconds = retry_seconds
        self.context = ssl.create_default_context(cafile=tls.ca)
        self.context.load_cert_chain(tls.cert, tls.key)
        self.stats = WriterStats()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []

    def _connect(self, endpoint: str) -> http.client.HTTPSConnection:
        url = urllib.parse.urlsplit(endpoint)
        return http.client.HTTPSConnection(url.hostname or "", url.port, timeout=10, context=self.context)

    def _put(
        self, conns: dict[str, http.client.HTTPSConnection], endpoint: str, key: str, value: str
    ) -> bool:
        conn = conns.get(endpoint) or conns.setdefault(endpoint, self._connect(endpoint))
        try:
            conn.request(
                "POST",
                "/v3/kv/put",
                json.dumps({"key": _b64(key), "value": _b64(value)}),
                {"Content-Type": "application/json"},
            )
            reply = conn.getresponse().read()
            return b'"error"' not in reply and b"header" in reply
        except (OSError, http.client.HTTPException):
            conn.close()
            conns.pop(endpoint, None)
            return False

    def _run(self, index: int) -> None:
        conns: dict[str, http.client.HTTPSConnection] = {}
        interval = self.threads / self.rate
        next_at = time.monotonic() + index * interval / self.threads
        seq = 0
        while not self._stop.is_set():
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            next_at += interval
            key, value = f"{self.prefix}/{index}/{seq:08d}", f"{self.value}-{seq}"
            seq += 1
            started = time.monotonic()
            attempt = 0
            while True:
                endpoint = self.endpoints[(index + seq + attempt) % len(self.endpoints)]
                if self._put(conns, endpoint, key, value):
                    with self._lock:
                        self.stats.acked[key] = value
                        self.stats.latencies.append((started, time.monotonic() - started))
                    break
                attempt += 1
                with self._lock:
                    self.stats.retries += 1
                if time.monotonic() - started > self.retry_seconds:
                    with self._lock:
                        self.stats.failed.append(key)
                    break
                time.sleep(0.05)

    def __enter__(self) -> Writer:
        self.stats.started = time.monotonic()
        self._workers = [
            threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(self.threads)
        ]
        for worker in self._workers:
            worker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join(timeout=self.retry_seconds + 15)
        self.stats.stopped = time.monotonic()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(round(q / 100.0 * (len(ordered) - 1))))]
