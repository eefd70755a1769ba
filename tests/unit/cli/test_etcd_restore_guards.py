"""`etcd restore` and `etcd member replace` refuse before anything is stopped: a cluster that answers at
all (TCP or TLS), a snapshot filed as another cluster's, a file that is no bbolt database or no regular
file, and a member found by URL under another name or healthy (issue 42)."""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
import signal
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

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


def _cert(name: str, issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None, *, expired: bool = False,
          ca: bool = False) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    now = datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    signer_name, signer_key = issuer or (subject, key)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(signer_name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(days=10))
               .not_valid_after(now + datetime.timedelta(days=-1 if expired else 1)))
    if ca:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    else:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return builder.sign(signer_key, hashes.SHA256()), key


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@pytest.fixture
def tls_member(tmp_path: Path) -> Iterator[Callable[[int, str], None]]:
    """A member speaking TLS at a port, in one of the ways ufcctl's handshake fails while the member may
    still serve its clients: "another-ca" (the controller's state directory holds another environment's
    CA), "expired" (the member's certificate is past its date), "damaged-ca" (the controller's ca.crt)."""
    servers: list[socket.socket] = []

    def serve(port: int, how: str) -> None:
        ca, ca_key = _cert("member CA", None, ca=True)
        ours = tmp_path / "pki" / "ca.crt"
        if how == "expired":
            ours.write_bytes(_pem(ca))  # the member's CA is the controller's
        elif how == "damaged-ca":
            ours.write_bytes(b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
        cert, key = _cert("m1", (ca.subject, ca_key), expired=how == "expired")
        (tmp_path / "member.crt").write_bytes(_pem(cert))
        (tmp_path / "member.key").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tmp_path / "member.crt", tmp_path / "member.key")
        server = socket.create_server(("127.0.0.1", port))
        servers.append(server)

        def loop() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                try:
                    with context.wrap_socket(conn, server_side=True) as tls:
                        tls.recv(1024)
                except (OSError, ssl.SSLError):
                    pass

        threading.Thread(target=loop, daemon=True).start()

    yield serve
    for server in servers:
        server.close()


TLS_FAILURES = [
    # id, how the member's TLS fails for ufcctl, the reason the refusal quotes
    ("another-environments-ca", "another-ca", "CERTIFICATE_VERIFY_FAILED"),
    ("expired-member-certificate", "expired", "certificate has expired"),
    ("damaged-local-ca", "damaged-ca", "cannot load ufcctl's CA or client certificate"),
]


@pytest.mark.parametrize(("how", "reason"), [c[1:] for c in TLS_FAILURES], ids=[c[0] for c in TLS_FAILURES])
def test_a_tls_failure_is_no_proof_of_a_dead_member(tmp_path: Path, no_playbook: None, tls_member, how: str,
                                                    reason: str) -> None:
    inv = _inventory(tmp_path)
    tls_member(_ports(inv)["core"], how)
    code, out = _run("etcd", "restore", "-i", str(inv), "--cluster", "core", "--from",
                     str(_snapshot(tmp_path / "core.db")))
    assert code == 2, out
    assert "Error: etcd cluster core is running: m1 at https://127.0.0.1:" in out
    assert reason in " ".join(out.split()), out


def _not_bbolt(path: Path) -> Path:
    body = bytes(range(256)) * 32  # valid trailer, no bbolt magic
    path.write_bytes(body + hashlib.sha256(body).digest())
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _link_into_events(tmp: Path) -> Path:
    """core/latest.db, a link to events' snapshot: the name given says nothing, the file it leads to does."""
    (tmp / "events").mkdir()
    (tmp / "core").mkdir()
    _snapshot(tmp / "events" / "events-20261201T000000Z.db")
    (tmp / "core" / "latest.db").symlink_to("../events/events-20261201T000000Z.db")
    return tmp / "core" / "latest.db"


def _peer_port(inv: Path) -> int:
    """core's peer port moved to a free one (the default, 2380, may be another process's on this machine)."""
    from tests.unit.cli.test_etcd_cli import _free_port

    path = inv / "group_vars" / "all" / "vars.yml"
    data = yaml.safe_load(path.read_text())
    data["etcd_core_peer_port"] = port = _free_port()
    path.write_text(yaml.safe_dump(data))
    return port


CASES = [
    # id, how the snapshot is made (tmp_path -> file), listener at m1's core "client" or "peer" port, message
    ("tls-failure-counts-as-running", lambda t: _snapshot(t / "core.db"), "client",
     "Error: etcd cluster core is running: m1 at https://127.0.0.1:{client}: "),
    ("peer-port-answer-counts-as-running", lambda t: _snapshot(t / "core.db"), "peer",
     "Error: etcd cluster core is running: m1 at https://127.0.0.1:{peer}: "),
    ("link-leads-to-events-snapshot", _link_into_events, None,
     "its file name behind the link says it is a snapshot of cluster events, not core"),
    ("file-name-says-events", lambda t: _snapshot(t / "events-20261201T000000Z.db"), None,
     "its file name says it is a snapshot of cluster events, not core"),
    ("directory-says-events", lambda t: _snapshot((t / "events").mkdir() or t / "events" / "x.db"), None,
     "its directory says it is a snapshot of cluster events, not core"),
    ("valid-trailer-no-bbolt", lambda t: _not_bbolt(t / "core.db"), None,
     "not a bbolt database (no bbolt magic in its first page)"),
    ("fifo-is-no-snapshot", lambda t: _fifo(t / "core.db"), None, "not a regular file"),
    ("dev-zero-is-no-snapshot", lambda t: Path("/dev/zero"), None, "/dev/zero: not a regular file"),
]


@pytest.mark.parametrize(("make", "listening", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_restore_refuses_before_anything_is_stopped(tmp_path: Path, no_playbook: None, tls_listener,
                                                    hang_guard: None, make, listening, message) -> None:
    inv = _inventory(tmp_path)
    ports = {"client": _ports(inv)["core"], "peer": _peer_port(inv)}
    if listening:
        tls_listener(ports[listening])
    code, out = _run("etcd", "restore", "-i", str(inv), "--cluster", "core", "--from", str(make(tmp_path)))
    assert code == 2, out
    assert message.format(**ports) in out
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
    ("same-name-healthy", [("m1", "m1", True), ("m2", "m2", True), ("m3", "m3", True)],
     "member m2 of etcd cluster core is healthy: replace only a dead or broken member"),
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
