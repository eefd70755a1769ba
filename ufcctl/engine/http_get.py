"""One HTTP(S) request with a deadline for the whole exchange, a cap on the answer, no redirect to
another host and no credentials in the URL: the small client under victoria.py, registry_client.py
and etcd_client.py.

Why not urllib's timeout: it bounds each socket operation, so a server that sends one byte a
second keeps the client forever. Here every read and write gets what is left of one deadline
(connect, TLS handshake, request, headers and body together). The answer is read up to `max_bytes`
and refused past it, so a wrong or hostile server cannot fill the controller's memory.
Redirects are followed only to the same scheme, host and port (at most MAX_REDIRECTS); one to
another host is refused with an error naming it. Standard library only: node-side programs ship
it (ufcctl/nodeside/__init__.py).
"""

from __future__ import annotations

import http.client
import io
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ufcctl.domain.urls import has_credentials, mask

MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
CHUNK = 1 << 16


class HttpError(Exception):
    """No usable answer: `url` (credentials masked) and `reason`, one line."""

    def __init__(self, url: str, reason: str):
        super().__init__(f"{mask(url)}: {reason}")
        self.url = mask(url)
        self.reason = reason


class HttpTimeout(HttpError, TimeoutError):
    """The deadline passed before the whole answer was in (a TimeoutError, as callers test for)."""


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    body: bytes
    url: str  # the URL that answered (after same-host redirects), credentials masked


class _Expired(TimeoutError):
    pass


class _Deadline:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise _Expired
        return left


class _Reader(io.RawIOBase):
    """The socket's reads, each given only what is left of the deadline."""

    def __init__(self, sock: socket.socket, deadline: _Deadline):
        self._sock, self._deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(self._deadline.left())
        return self._sock.recv_into(buffer)


class _DeadlineSocket:
    """What http.client needs of a socket (sendall, makefile, close), under one deadline."""

    def __init__(self, sock: socket.socket, deadline: _Deadline):
        self._sock, self._deadline = sock, deadline

    def sendall(self, data: bytes) -> None:
        self._sock.settimeout(self._deadline.left())
        self._sock.sendall(data)

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_Reader(self._sock, self._deadline))

    def close(self) -> None:
        # http.client closes the connection as soon as a `Connection: close` answer's headers are
        # in, while the body is still to be read through makefile(): the socket is closed by
        # request() once the body is read
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def request(url: str, *, deadline: float, max_bytes: int, method: str = "GET", body: bytes | None = None,
            headers: Mapping[str, str] | None = None, context: ssl.SSLContext | None = None) -> Answer:
    """The answer to one request, whatever its status; HttpError when none arrives in time or whole."""
    if has_credentials(url):
        raise HttpError(url, "credentials in the URL are not supported; remove user:password@")
    clock = _Deadline(deadline)
    first = urllib.parse.urlsplit(url)
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        answer, location = _once(current, clock, deadline, max_bytes, method, body, headers, context)
        if location is None:
            return answer
        target = urllib.parse.urljoin(current, location)
        moved = urllib.parse.urlsplit(target)
        if (moved.scheme, moved.hostname, moved.port) != (first.scheme, first.hostname, first.port):
            elsewhere = moved.netloc.rpartition("@")[2] or target  # never the userinfo
            raise HttpError(url, f"redirected to another host ({elsewhere}): refused")
        if answer.status == 303:
            method, body = "GET", None
        current = target
    raise HttpError(url, f"more than {MAX_REDIRECTS} redirects")


def stream_lines(url: str, sink: Callable[[bytes], None], *, deadline: float, max_line: int,
                 method: str = "POST", body: bytes | None = None, headers: Mapping[str, str] | None = None,
                 context: ssl.SSLContext | None = None) -> int:
    """Hand every line of a 200 answer's body to `sink` as it arrives (a streamed body of any size, read
    in lines of at most `max_line` bytes); returns the status. Any other status reads its body (capped
    at `max_line`) into one HttpError. No redirects: the streamed endpoints (etcd's gateway) send none.
    """
    if has_credentials(url):
        raise HttpError(url, "credentials in the URL are not supported; remove user:password@")
    clock = _Deadline(deadline)
    with _exchange(url, clock, context, f"not all of the answer within {deadline:g} s") as (conn, path):
        conn.request(method, path, body=body, headers=dict(headers or {}))
        response = conn.getresponse()
        if response.status != 200:
            text = _read(url, response, max_line, clock).decode("utf-8", "replace").strip()
            raise HttpError(url, f"HTTP {response.status}: {text[:200]}")
        while line := response.readline(max_line + 1):
            if len(line) > max_line and not line.endswith(b"\n"):
                raise HttpError(url, f"a line of the answer is over {max_line} bytes")
            clock.left()
            sink(line)
    return response.status


def _once(url: str, clock: _Deadline, seconds: float, max_bytes: int, method: str, body: bytes | None,
          headers: Mapping[str, str] | None, context: ssl.SSLContext | None) -> tuple[Answer, str | None]:
    with _exchange(url, clock, context, f"no answer within {seconds:g} s") as (conn, path):
        conn.request(method, path, body=body, headers=dict(headers or {}))
        response = conn.getresponse()
        data = _read(url, response, max_bytes, clock)
    location = response.getheader("Location") if response.status in REDIRECTS else None
    return Answer(response.status, response.reason, data, mask(url)), location


@contextmanager
def _exchange(url: str, clock: _Deadline, context: ssl.SSLContext | None,
              timed_out: str) -> Iterator[tuple[http.client.HTTPConnection, str]]:
    """A connection to `url`'s host under `clock` and the path to ask for, closed after; every failure
    inside becomes one HttpError (`timed_out` when the deadline passed)."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        raise HttpError(url, "the port is not a number from 0 to 65535") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HttpError(url, "not an http(s) URL")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        conn, sock = _connect(parts.scheme, parts.hostname, port, clock, context)
        try:
            yield conn, path
        finally:
            conn.close()
            sock.close()
    except TimeoutError:  # _Expired, or a socket timeout, which is set to what was left
        raise HttpTimeout(url, timed_out) from None
    except ConnectionRefusedError:
        raise HttpError(url, "connection refused") from None
    except (OSError, http.client.HTTPException) as err:  # reset, TLS failure, malformed answer
        raise HttpError(url, f"{type(err).__name__}: {err}") from None


def _connect(scheme: str, host: str, port: int | None, clock: _Deadline,
             context: ssl.SSLContext | None) -> tuple[http.client.HTTPConnection, socket.socket]:
    conn: http.client.HTTPConnection
    if scheme == "https":
        conn = http.client.HTTPSConnection(host, port, timeout=clock.left(),
                                           context=context or ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(host, port, timeout=clock.left())
    conn.connect()
    sock = conn.sock
    conn.sock = _DeadlineSocket(sock, clock)  # duck-typed: what http.client calls of a socket
    return conn, sock


def _read(url: str, response: http.client.HTTPResponse, max_bytes: int, clock: _Deadline) -> bytes:
    declared = response.getheader("Content-Length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise HttpError(url, f"answer of {int(declared)} bytes is over the limit of {max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    while True:
        clock.left()
        chunk = response.read(min(CHUNK, max_bytes + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise HttpError(url, f"answer over the limit of {max_bytes} bytes")
