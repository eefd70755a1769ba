"""VictoriaMetrics stand-in (test code): a loopback HTTP server answering GET /api/v1/query from a table.

It is not VictoriaMetrics: it knows nothing of PromQL and answers each expression with the samples
the test gave it (an empty vector for any other), or with the failure the test chose.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NAME = "VictoriaMetrics stand-in (test code)"


@dataclass
class Standin:
    port: int = 0
    # expression -> list of (labels, value): the vector answered to that query
    vectors: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)
    mode: str = "ok"  # ok | http500 | badjson | failed-status | sleep
    sleep: float = 0.0
    asked: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def body(self, expr: str) -> tuple[int, bytes]:
        if self.mode == "http500":
            return 500, json.dumps({"status": "error", "error": "stand-in: internal error"}).encode()
        if self.mode == "badjson":
            return 200, b"{not json"
        if self.mode == "failed-status":
            return 200, json.dumps({"status": "error", "errorType": "bad_data", "error": "stand-in"}).encode()
        result = [
            {"metric": labels, "value": [1700000000.0, repr(float(value))]}
            for labels, value in self.vectors.get(expr, [])
        ]
        data = {"resultType": "vector", "result": result}
        return 200, json.dumps({"status": "success", "data": data}).encode()


def _handler(standin: Standin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            parsed = urllib.parse.urlsplit(self.path)
            if parsed.path != "/api/v1/query":
                self.send_error(404)
                return
            expr = urllib.parse.parse_qs(parsed.query).get("query", [""])[0]
            standin.asked.append(expr)
            if standin.mode == "sleep":
                time.sleep(standin.sleep)
            status, body = standin.body(expr)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client gave up (the timeout case)
                pass

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            pass

    return Handler


@contextmanager
def victoria_standin(
    vectors: Mapping[str, list[tuple[dict[str, str], float]]] | None = None,
    mode: str = "ok",
    sleep: float = 0.0,
) -> Iterator[Standin]:
    """A running stand-in on 127.0.0.1 (a free port), stopped on exit."""
    standin = Standin(vectors=dict(vectors or {}), mode=mode, sleep=sleep)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(standin))
    server.daemon_threads = True
    standin.port = int(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, name=NAME, daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
