"""The rollout gate's server: a unix socket where each host's play asks whether it may start.

The other end is the `ufc_gate` action of the rollout playbooks (playbooks/action_plugins/ufc_gate.py),
the first task of every rollout play. Protocol, one JSON line each way on one connection:

    gate -> engine   {"host": "<inventory_hostname>"}
    engine -> gate   {"answer": "go" | "skip" | "stop", "reason": "<why, for skip and stop>",
                      "facts": {...}}

`facts` (with go; may be empty) is what the engine knows about the host that its play needs, returned
by the action as `ufc_rollout_gate.facts`: `labels_at_target` (LABELS_AT_TARGET) is true when the drain
pool found the Node's labels at the rollout's target and therefore did NOT drain it (roles/ascend_driver
then refuses to install without draining it in the play), false when the node was drained.

The gate blocks until the answer comes, however long that is (a host waits for a free slot). The
action finds the socket through the environment variable GATE_ENV; without it (a plain
`ansible-playbook` run) it answers go at once. If the engine dies, the kernel closes the
connection and the gate fails the host: an orphaned Ansible process starts no new node.

One thread serves every connection with `selectors`; answers are written by whichever thread
decides them (a line of JSON to a unix socket with an empty buffer never blocks). The socket's
directory is private (0700), so only this user can ask.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import selectors
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

GATE_ENV = "UFC_ROLLOUT_GATE"
GO, SKIP, STOP = "go", "skip", "stop"
LABELS_AT_TARGET = "labels_at_target"  # a fact of the go: the node was not drained (rollout/drainpool.py)
ANSWERS = (GO, SKIP, STOP)
MAX_REQUEST = 4096  # bytes: a host name and JSON punctuation
# sockaddr_un holds 108 bytes on Linux, the terminating NUL included (unix(7)).
MAX_SOCKET_PATH = 107


class GateRequest:
    """One host waiting at the gate; answer it once."""

    def __init__(self, host: str, conn: socket.socket):
        self.host = host
        self._conn = conn
        self._lock = threading.Lock()
        self.answered = False
        self.facts: dict[str, object] = {}  # sent with the answer (set before it is answered)

    def drop(self) -> None:
        """Close without an answer (the gate fails the host), unless answered already."""
        with self._lock:
            if not self.answered:
                self.answered = True
                self._conn.close()

    def answer(self, answer: str, reason: str | None = None) -> bool:
        """Send the answer and close; False when the host's process has gone away."""
        if answer not in ANSWERS:
            raise ValueError(f"unknown gate answer {answer!r}")
        with self._lock:
            if self.answered:
                return False
            self.answered = True
            line = json.dumps({"answer": answer, "reason": reason, "facts": self.facts}).encode() + b"\n"
            try:
                self._conn.setblocking(True)
                self._conn.settimeout(5)
                self._conn.sendall(line)
                return True
            except OSError:
                return False
            finally:
                self._conn.close()


class GateServer:
    """Serves the gate socket; `on_request` is called (on the server thread) for each host that asks."""

    def __init__(self, directory: Path, on_request: Callable[[GateRequest], None]):
        self.on_request = on_request
        self._own_dir: Path | None = None
        self._directory = directory
        # A name of its own per attempt: after a kill -9, the killed attempt's Ansible processes may
        # live on for a while, and a host of theirs reaching the gate must find nobody (and fail in
        # that orphaned play), never the resumed attempt's engine, which would admit it a second time
        # while the orphan, not the resumed process, runs it.
        name = f"gate-{secrets.token_hex(4)}.sock"
        path = directory / name
        if len(os.fsencode(path)) > MAX_SOCKET_PATH:
            # a deep state directory: a short private directory instead, removed at close
            self._own_dir = Path(tempfile.mkdtemp(prefix="ufc-gate-"))
            path = self._own_dir / name
        self.path = path
        self._selector = selectors.DefaultSelector()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._wake_r, self._wake_w = socket.socketpair()
        self._buffers: dict[socket.socket, bytes] = {}
        self._asked: list[GateRequest] = []  # handed to the engine; closed at close() if unanswered
        self._prune_at = 64
        self._closing = False
        self._thread = threading.Thread(target=self._serve, name="rollout-gate", daemon=True)

    def env(self) -> dict[str, str]:
        """What the Ansible process needs in its environment to find the gate."""
        return {GATE_ENV: str(self.path)}

    def start(self) -> GateServer:
        # Socket files left by killed earlier attempts of this run (the run's lock says none of them
        # is alive): nothing listens on them any more.
        for stale in self._directory.glob("gate*.sock"):
            stale.unlink(missing_ok=True)
        self._listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self._listener.listen(1024)
        self._listener.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing = True
        self._wake_w.send(b"x")
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        for conn in list(self._buffers):
            conn.close()
        for request in self._asked:  # as a killed engine's would be: the gate fails those hosts
            request.drop()
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()
        self._selector.close()
        self.path.unlink(missing_ok=True)
        if self._own_dir is not None:
            self._own_dir.rmdir()

    def __enter__(self) -> GateServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _serve(self) -> None:
        while not self._closing:
            for key, _ in self._selector.select(timeout=1.0):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self._listener:
                    self._accept()
                elif sock is self._wake_r:
                    sock.recv(64)
                else:
                    self._read(sock)

    def _accept(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except BlockingIOError:
            return
        conn.setblocking(False)
        self._buffers[conn] = b""
        self._selector.register(conn, selectors.EVENT_READ)

    def _drop(self, conn: socket.socket) -> None:
        self._selector.unregister(conn)
        del self._buffers[conn]

    def _read(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(MAX_REQUEST)
        except OSError:
            data = b""
        if not data:  # the asker went away before its request was complete
            self._drop(conn)
            conn.close()
            return
        buffer = self._buffers[conn] + data
        if b"\n" not in buffer:
            if len(buffer) > MAX_REQUEST:
                self._drop(conn)
                conn.close()
            else:
                self._buffers[conn] = buffer
            return
        self._drop(conn)
        host = _host(buffer.split(b"\n", 1)[0])
        if host is None:
            log.warning("gate: a request that is not {\"host\": NAME}: %r", buffer[:200])
            GateRequest("?", conn).answer(STOP, "malformed gate request")
            return
        request = GateRequest(host, conn)
        if len(self._asked) >= self._prune_at:  # amortised: answered requests are dropped from the list
            self._asked = [r for r in self._asked if not r.answered]
            self._prune_at = max(64, 2 * len(self._asked))
        self._asked.append(request)
        try:
            self.on_request(request)
        except Exception:  # the engine's bug must not kill the server: the host is told to stop
            log.exception("gate: handling %s failed", host)
            request.answer(STOP, "the rollout engine failed to handle this host")


def _host(line: bytes) -> str | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    host = data.get("host") if isinstance(data, dict) else None
    return host if isinstance(host, str) and host else None
