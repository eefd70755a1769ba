"""`etcd restore` and `etcd member replace` refuse before anything is stopped: a cluster that answers at
all (TCP or TLS), a snapshot filed as another cluster's, a file that is no bbolt database or no regular
file, and a member found by URL under another name or healthy (issue 42)."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from tests.unit.cli.test_etcd_cli import _inventory, _run, _snapshot


def _ports(inv: Path) -> dict[str, int]:
    data = yaml.safe_load((inv / "group_vars" / "all" / "vars.yml").read_text())
    return {c: int(data[f"etcd_{c}_client_port"]) for c in ("core", "events", "pods")}


@pytest.fixture
def no_playbook(monkeypatch: pytest.MonkeyPatch) -> None:
    from ufcctl.app import etcd_backup, etcd_member

    for module in (etcd_backup, etcd_member):
        monkeypatch.setattr(module, "run_playbook", lambda *a, **k: pytest.fail("a playbook ran"))


@pytest.fixture
def tls_listener(tmp_path: Path) -> Iterator[Callable[[int], None]]:
    """Something at a member's client port that accepts TCP and answers no TLS (a member whose
    certificate ufcctl cannot check looks the same from here)."""
    servers: list[socket.socket] = []

    def listen(port: int) -> None:
        server = socket.create_server(("127.0.0.1", port))
        servers.append(server)

        def serve() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\nnot TLS\n")
                conn.close()

        threading.Thread(target=serve, daemon=True).start()

    yield listen
    for server in servers:
        server.close()


@pytest.fixture
def hang_guard() -> Iterator[None]:
    """A FIFO read before its stat blocks forever: the test fails after 30 s instead of hanging."""
    def late(signum: int, frame: object) -> None:
        raise TimeoutError("hung reading the snapshot")

    previous = signal.signal(signal.SIGALRM, late)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _not_bbolt(path: Path) -> Path:
    body = bytes(range(256)) * 32  # valid trailer, no bbolt magic
    path.write_bytes(body + hashlib.sha256(body).digest())
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


CASES = [
    # id, how the snapshot is made (tmp_path -> file), listener on m1's core port, message
    ("tls-failure-counts-as-running", lambda t: _snapshot(t / "core.db"), True,
     "Error: etcd cluster core is running: m1 at https://127.0.0.1:"),
    ("file-name-says-events", lambda t: _snapshot(t / "events-20261201T000000Z.db"), False,
     "its file name says it is a snapshot of cluster events, not core"),
    ("directory-says-events", lambda t: _snapshot((t / "events").mkdir() or t / "events" / "x.db"), False,
     "its directory says it is a snapshot of cluster events, not core"),
    ("valid-trailer-no-bbolt", lambda t: _not_bbolt(t / "core.db"), False,
     "not a bbolt database (no bbolt magic in its first page)"),
    ("fifo-is-no-snapshot", lambda t: _fifo(t / "core.db"), False, "not a regular file"),
    ("dev-zero-is-no-snapshot", lambda t: Path("/dev/zero"), False, "/dev/zero: not a regular file"),
]


@pytest.mark.parametrize(("make", "listening", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_restore_refuses_before_anything_is_stopped(tmp_path: Path, no_playbook: None, tls_listener,
                                                    hang_guard: None, make, listening, message) -> None:
    inv = _inventory(tmp_path)
    if listening:
        tls_listener(_ports(inv)["core"])
    code, out = _run("etcd", "restore", "-i", str(inv), "--cluster", "core", "--from", str(make(tmp_path)))
    assert code == 2, out
    assert message in out
    if listening:
        assert "SSL" in out or "TLS" in out  # the TLS reason, not "no member answers"


def test_restore_of_a_misfiled_snapshot_goes_on_with_the_override(tmp_path: Path, monkeypatch) -> None:
    from ufcctl.app import etcd_backup as app
    from ufcctl.engine.run_result import HostResult, RunResult

    ran = []

    def run(path, hosts, options, **kwargs):
        ran.append(path.name)
        return RunResult("r1", path.name, "successful", 0, {h.name: HostResult(h.name, ok=5) for h in hosts},
                         tmp_path, 1.0)

    monkeypatch.setattr(app, "run_playbook", run)
    snapshot = _snapshot(tmp_path / "events-20261201T000000Z.db")
    code, out = _run("etcd", "restore", "-i", str(_inventory(tmp_path)), "--cluster", "core", "--from",
                     str(snapshot), "--i-know-it-is-another-cluster")
    assert ran == ["etcd-restore.yml"], out  # then not healthy: nobody listens at the members' ports
    assert code == 1 and "restored but not healthy" in out


def _view(inv: Path, members: list[tuple[str, str, bool]]):
    """A member list: (name, the inventory host whose URLs it has, healthy)."""
    from ufcctl.domain.etcd.defrag import ClusterView, Member, MemberStatus

    port = _ports(inv)["core"]
    listed = tuple(Member(str(i), name, (f"https://127.0.0.{at[1:]}:{port}",), False,
                          (f"https://127.0.0.{at[1:]}:2380",)) for i, (name, at, _) in enumerate(members, 1))
    healthy = {name for name, _, ok in members if ok}
    statuses = {m.name: MemberStatus(m.member_id, "1", 1, 1, 1, 1, 1) for m in listed if m.name in healthy}
    return ClusterView("core", listed, statuses, {}, (), {})


REPLACE = [
    # id, the cluster's member list, message
    ("renamed-host-healthy-member-at-its-url",
     [("m1", "m1", True), ("old-m2", "m2", True), ("m3", "m3", True)],
     "the member at https://127.0.0.2"),
    ("renamed-host-dead-member-at-its-url",
     [("m1", "m1", True), ("old-m2", "m2", False), ("m3", "m3", True)],
     "is named old-m2 in cluster core, not m2 as in the inventory"),
    ("name-at-another-url", [("m1", "m1", True), ("m2", "m3", False), ("m3", "m2", True)],
     "is named m3 in cluster core, not m2"),
]


@pytest.mark.parametrize(("members", "message"), [c[1:] for c in REPLACE], ids=[c[0] for c in REPLACE])
def test_member_replace_matches_by_url_and_refuses(tmp_path: Path, monkeypatch, no_playbook: None, members,
                                                  message) -> None:
    from ufcctl.engine.etcd_client import ClusterClient

    inv = _inventory(tmp_path)
    monkeypatch.setattr(ClusterClient, "view", lambda self, with_last=True: _view(inv, members))
    code, out = _run("etcd", "member", "replace", "-i", str(inv), "--cluster", "core", "--member", "m2")
    assert code == 2, out
    assert message in out and "nothing was touched" in out
