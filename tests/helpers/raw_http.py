"""A loopback HTTP server that answers with whatever bytes a test scripts, as slowly as it likes.

`answer(path)` returns the chunks to send and the pause between them; the server stops sending when
the client hangs up, and sends at most what the script lists, so a trickle cannot outlive its test.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

Script = Callable[[str], tuple[Sequence[bytes], float]]


def response(status: str, body: bytes, headers: Sequence[str] = ()) -> bytes:
    head = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def json_answer(body: bytes) -> Script:
    return lambda path: ([response("200 OK", body, ["Content-Type: application/json"])], 0.0)


@contextmanager
def raw_server(script: Script, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve `script` on `host`; yields the base URL (http://host:port)."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            conn: socket.socket = self.request
            conn.settimeout(5)
            head = b""
            while b"\r\n\r\n" not in head:
                got = conn.recv(4096)
                if not got:
                    return
                head += got
            path = head.split(b" ", 2)[1].decode()
            chunks, pause = script(path)
            try:
                for chunk in chunks:
                    conn.sendall(chunk)
                    if pause:
                        time.sleep(pause)
            except OSError:  # the client gave up
                return

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    with Server((host, 0), Handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://{host}:{server.server_address[1]}"
        finally:
            server.shutdown()
