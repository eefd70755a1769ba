"""`ufcctl etcd status|defrag|prune`: exit codes and messages when certificates or members are missing.

Members here are loopback addresses nobody listens on (ports taken from a socket the test closed);
the success paths run against real members in tests/integration/test_etcd_lab.py.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ufcctl.cli.main import cli


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_pki(pki: Path) -> None:
    """A CA and a client certificate, as roles/etcd leaves them on the controller."""
    pki.mkdir(parents=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ufcctl")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(ca_key, hashes.SHA256())
    )
    (pki / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (pki / "ufcctl.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (pki / "ufcctl.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


def _inventory(tmp_path: Path, with_pki: bool = True) -> Path:
    inv = tmp_path / "inv"
    (inv / "group_vars" / "all").mkdir(parents=True)
    # ports nobody listens on, so connections are refused at once; one per cluster (the
    # inventory check refuses two clusters on one port of a host)
    ports = {c: _free_port() for c in ("core", "events", "pods")}
    hosts = {f"m{i}": {"ansible_host": f"127.0.0.{i}"} for i in (1, 2, 3)}
    groups = {g: {"children": {"kube_control_plane": {}}} for g in ("etcd_core", "etcd_events", "etcd_pods")}
    (inv / "hosts.yml").write_text(
        yaml.safe_dump({"all": {"children": {"kube_control_plane": {"hosts": hosts}, **groups}}})
    )
    (inv / "group_vars" / "all" / "vars.yml").write_text(
        yaml.safe_dump(
            {
                "ufc_vip": "10.0.0.10",
                "ufc_vip_interface": "eth0",
                "etcd_pki_controller_dir": str(tmp_path / "pki"),
                **{f"etcd_{c}_client_port": port for c, port in ports.items()},
            }
        )
    )
    if with_pki:
        _write_pki(tmp_path / "pki")
    return inv


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _run_json(*args: str) -> tuple[int, object, str]:
    """Exit code, parsed stdout, stderr (click >= 8.2 keeps them apart)."""
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, json.loads(result.stdout), result.stderr


def test_status_without_certificates_says_to_deploy(tmp_path: Path) -> None:
    code, out = _run("etcd", "status", "-i", str(_inventory(tmp_path, with_pki=False)))
    assert code == 2
    assert "Error: no etcd client certificate for ufcctl: missing" in out
    assert "Hint: deploy etcd first" in out


def test_status_of_unreachable_clusters_exits_1_and_names_them(tmp_path: Path) -> None:
    code, data, err = _run_json("etcd", "status", "-i", str(_inventory(tmp_path)), "-o", "json")
    assert code == 1
    assert isinstance(data, list)
    assert [c["cluster"] for c in data] == ["core", "events", "pods"]
    assert all(not c["healthy"] and "no member answered" in c["problems"][0] for c in data)
    assert [m["member"] for m in data[0]["members"]] == ["m1", "m2", "m3"]
    assert data[0]["members"][0]["health"].startswith("unreachable: ")
    assert "Error: unhealthy etcd cluster(s): core, events, pods" in err


def test_status_one_cluster_in_text(tmp_path: Path) -> None:
    code, out = _run("etcd", "status", "-i", str(_inventory(tmp_path)), "--cluster", "pods")
    assert code == 1
    assert "etcd pods: UNHEALTHY" in out and "etcd core" not in out


def test_defrag_on_unreachable_cluster_fails_with_hint(tmp_path: Path) -> None:
    code, out = _run("etcd", "defrag", "-i", str(_inventory(tmp_path)), "--cluster", "core", "--dry-run")
    assert code == 1
    assert "Error: etcd cluster core: core: no endpoint answered" in out
    assert "Hint: check `ufcctl etcd status`" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--cluster", "events"], "Error: --cluster events: prune applies to core only", id="not-core"
        ),
        pytest.param(["--cluster", "nope"], "Invalid value for '--cluster'", id="unknown-cluster"),
    ],
)
def test_prune_refuses_other_clusters(tmp_path: Path, args: list[str], message: str) -> None:
    code, out = _run("etcd", "prune", "-i", str(_inventory(tmp_path)), *args)
    assert code == 2
    assert message in out


def test_missing_inventory_exits_2(tmp_path: Path) -> None:
    code, out = _run("etcd", "status", "-i", str(tmp_path / "none"))
    assert code == 2 and "no such directory" in out


@pytest.fixture()
def black_holes(tmp_path: Path) -> Iterator[Path]:
    """An inventory of 9 members (3 clusters x 127.0.0.1-3) whose client ports accept TCP into the
    backlog and never speak TLS: the shape of a black-holed network, on loopback only."""
    inv = _inventory(tmp_path)
    values = yaml.safe_load((inv / "group_vars" / "all" / "vars.yml").read_text())
    sockets = []
    for cluster in ("core", "events", "pods"):
        for i in (1, 2, 3):
            s = socket.socket()
            s.bind((f"127.0.0.{i}", values[f"etcd_{cluster}_client_port"]))
            s.listen(8)
            sockets.append(s)
    yield inv
    for s in sockets:
        s.close()


def test_status_against_black_holes_answers_within_the_timeout_and_names_every_member(
    black_holes: Path,
) -> None:
    started = time.monotonic()
    code, data, err = _run_json("etcd", "status", "-i", str(black_holes), "--timeout", "1", "-o", "json")
    elapsed = time.monotonic() - started
    assert elapsed < 1 * 3 + 10  # a hang guard (90 s before the members were asked at once)
    assert code == 1
    assert isinstance(data, list) and [c["cluster"] for c in data] == ["core", "events", "pods"]
    for cluster in data:
        assert [m["member"] for m in cluster["members"]] == ["m1", "m2", "m3"]
        assert all(m["health"] == "unreachable: no answer within 1 s" for m in cluster["members"])
        assert cluster["problems"][0].startswith("no member answered: m1: no answer within 1 s")
    assert "asking" not in err  # --output json: no progress
    assert "Error: unhealthy etcd cluster(s): core, events, pods" in err


def test_status_shows_progress_on_stderr(black_holes: Path) -> None:
    result = CliRunner().invoke(cli, ["etcd", "status", "-i", str(black_holes), "--timeout", "0.5"])
    assert result.exit_code == 1
    assert "asking 9 etcd member(s) at once, at most 0.5 s each" in result.stderr
    assert result.stderr.count(": no answer within 0.5 s") == 9
    assert "etcd core: UNHEALTHY" in result.stdout


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0"])
def test_status_refuses_a_timeout_that_is_not_a_positive_number(tmp_path: Path, value: str) -> None:
    code, out = _run("etcd", "status", "-i", str(_inventory(tmp_path)), f"--timeout={value}")
    assert code == 2
    assert "Invalid value for '--timeout'" in out and "not a finite number from 0.001 to 86400" in out


def _snapshot(path: Path, corrupt: bool = False) -> Path:
    """A file shaped like etcd's: bbolt's meta page magic (0xED0CDAED, version 2) and the sha256 trailer."""
    body = bytes(16) + (0xED0CDAED).to_bytes(4, "little") + (2).to_bytes(4, "little")
    body += bytes(range(256)) * 32
    body = body[: 256 * 32]
    data = bytearray(body + hashlib.sha256(body).digest())
    if corrupt:
        data[10] ^= 1
    path.write_bytes(bytes(data))
    return path


def test_restore_refuses_a_corrupt_snapshot_before_looking_at_the_cluster(tmp_path: Path) -> None:
    bad = _snapshot(tmp_path / "core.db", corrupt=True)
    code, out = _run("etcd", "restore", "-i", str(_inventory(tmp_path, with_pki=False)), "--cluster", "core",
                     "--from", str(bad))
    assert code == 2
    assert f"Error: {bad}: fails etcd's sha256 trailer (the file is corrupt)" in out
    code, out = _run("etcd", "restore", "-i", str(tmp_path / "inv"), "--cluster", "core",
                     "--from", str(tmp_path / "missing.db"))
    assert code == 2 and "does not exist" in out


def test_restore_refuses_a_running_cluster_and_runs_nothing(tmp_path: Path, monkeypatch) -> None:
    from ufcctl.app import etcd_backup as app

    def answering(targets, tls, timeout):  # every member answers its status
        return {t: "answers its status" for t in targets}

    monkeypatch.setattr(app, "answering", answering)
    monkeypatch.setattr(app, "run_playbook", lambda *a, **k: pytest.fail("a playbook ran"))
    code, out = _run("etcd", "restore", "-i", str(_inventory(tmp_path)), "--cluster", "core",
                     "--from", str(_snapshot(tmp_path / "core.db")))
    assert code == 2
    assert "Error: etcd cluster core is running: m1 at https://127.0.0.1:" in out
    assert "m3 at https://127.0.0.3:" in out
    assert "stop etcd-core.service on every member first (m1, m2, m3)" in out


def test_restore_of_a_lost_cluster_runs_the_playbook_on_members_and_control_planes(
        tmp_path: Path, monkeypatch) -> None:
    from ufcctl.app import etcd_backup as app
    from ufcctl.engine.run_result import HostResult, RunResult

    seen = {}

    def run(path, hosts, options, **kwargs):
        seen.update(playbook=path.name, hosts=[h.name for h in hosts], vars=dict(options.extravars))
        return RunResult("r1", path.name, "successful", 0, {h.name: HostResult(h.name, ok=5) for h in hosts},
                         tmp_path, 1.0)

    monkeypatch.setattr(app, "run_playbook", run)
    snapshot = _snapshot(tmp_path / "core.db")
    code, out = _run("etcd", "restore", "-i", str(_inventory(tmp_path)), "--cluster", "core",
                     "--from", str(snapshot), "--bump-revision", "5000")
    # the members are loopback ports nobody listens on: "not running", then not healthy after the run
    assert code == 1 and "Error: etcd cluster core restored but not healthy" in out
    assert seen["playbook"] == "etcd-restore.yml" and seen["hosts"] == ["m1", "m2", "m3"]
    extravars = seen["vars"]
    assert extravars["etcd_restore_cluster"] == "core" and extravars["etcd_restore_bump_revision"] == 5000
    assert extravars["etcd_restore_snapshot"] == str(snapshot.resolve())
    assert extravars["etcd_restore_snapshot_sha256"] == hashlib.sha256(snapshot.read_bytes()).hexdigest()
    assert extravars["etcd_restore_token"].startswith("core-restored-")


def _view(health: dict[str, bool]):
    from ufcctl.domain.etcd.defrag import ClusterView, Member, MemberStatus

    members = tuple(Member(str(i), name, (f"https://{name}:1",)) for i, name in enumerate(health, 1))
    statuses = {m.name: MemberStatus(m.member_id, "1", 1, 1, 1, 1, 1) for m in members if health[m.name]}
    return ClusterView("core", members, statuses, {}, (), {})


@pytest.mark.parametrize(("member", "health", "message"), [
    ("m9", None, "Error: --member m9: not a member of etcd cluster core"),
    ("m1", None, "Error: etcd cluster core does not answer"),
    ("m2", {"m1": True, "m2": True, "m3": True}, "Error: member m2 of etcd cluster core is healthy"),
    ("m2", {"m1": True, "m2": False, "m3": False},
     "Error: etcd cluster core: 1 healthy member(s) of 2 without m2, no quorum"),
])
def test_member_replace_refuses_and_touches_nothing(tmp_path: Path, monkeypatch, member, health,
                                                    message) -> None:
    from ufcctl.app import etcd_member
    from ufcctl.engine.etcd_client import ClusterClient

    if health is not None:
        monkeypatch.setattr(ClusterClient, "view", lambda self, with_last=True: _view(health))
    monkeypatch.setattr(etcd_member, "run_playbook", lambda *a, **k: pytest.fail("a playbook ran"))
    code, out = _run("etcd", "member", "replace", "-i", str(_inventory(tmp_path)), "--cluster", "core",
                     "--member", member)
    assert code == 2, out
    assert message in out
