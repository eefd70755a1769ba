"""roles/monitoring_agent's ufcctl-cert-metrics: subject and notAfter decoded with the standard library
agree with cryptography's, and the textfile it writes."""

from __future__ import annotations

import datetime as dt
import importlib.machinery
import importlib.util
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from tests.helpers.certs import kubeconfig, make_pem

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "roles" / "monitoring_agent" / "files" / "ufcctl-cert-metrics"
_loader = importlib.machinery.SourceFileLoader("ufcctl_cert_metrics", str(SCRIPT))
_spec = importlib.util.spec_from_loader("ufcctl_cert_metrics", _loader)
assert _spec is not None
script = importlib.util.module_from_spec(_spec)
_loader.exec_module(script)


def _cert(name: x509.Name, not_after: dt.datetime, key_kind: str = "ec") -> x509.Certificate:
    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey = ec.generate_private_key(ec.SECP256R1())
    if key_kind == "rsa":
        key = rsa.generate_private_key(65537, 2048)
    issuer = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "some CA")])
    start = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    return (x509.CertificateBuilder().subject_name(name).issuer_name(issuer).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(not_after).sign(key, hashes.SHA256()))


NAMES = {
    "cn": x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ufc-cp1")]),
    "kubeadm-admin": x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kubeadm:cluster-admins"),
                                x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes-admin")]),
    "multi-valued-rdn": x509.Name([x509.RelativeDistinguishedName([
        x509.NameAttribute(NameOID.COMMON_NAME, "a"), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "b")])]),
    "utf8-and-unknown-oid": x509.Name([x509.NameAttribute(NameOID.SERIAL_NUMBER, "42"),
                                       x509.NameAttribute(NameOID.COMMON_NAME, "café")]),
}


@pytest.mark.parametrize("name", NAMES.values(), ids=NAMES.keys())
@pytest.mark.parametrize(
    "not_after", [dt.datetime(2027, 11, 28, 16, 0, 41, tzinfo=dt.UTC),  # UTCTime
                  dt.datetime(2049, 12, 31, 23, 59, 59, tzinfo=dt.UTC),  # the last UTCTime year
                  dt.datetime(2056, 3, 1, 0, 0, tzinfo=dt.UTC)],  # GeneralizedTime (RFC 5280: 2050 on)
    ids=["utctime", "utctime-2049", "generalizedtime"])
@pytest.mark.parametrize("key_kind", ["ec", "rsa"])
def test_decoding_agrees_with_cryptography(name: x509.Name, not_after: dt.datetime, key_kind: str) -> None:
    cert = _cert(name, not_after, key_kind)
    subject, timestamp = script.subject_and_not_after(cert.public_bytes(serialization.Encoding.DER))
    assert timestamp == int(cert.not_valid_after_utc.timestamp())
    assert subject == cert.subject.rfc4514_string()


def test_textfile_lists_present_certificates_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "member.crt"
    later = dt.datetime(2028, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    good.write_text(make_pem("ufc-cp1", later))
    kubelet = tmp_path / 'odd"name.pem'  # a quote in a path is escaped in the label
    kubelet.write_text(make_pem("system:node:w1", later, with_key=True))
    admin = tmp_path / "admin.conf"
    admin.write_text(kubeconfig(make_pem("kubernetes-admin", later, with_key=True)))
    broken = tmp_path / "broken.crt"
    broken.write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    text = script.metrics([str(good), str(tmp_path / "absent.crt"), str(kubelet), str(admin), str(broken)])
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    stamp = int(later.timestamp())
    assert lines == [
        f'ufcctl_certificate_not_after_timestamp_seconds{{path="{good}",subject="CN=ufc-cp1"}} {stamp}',
        f'ufcctl_certificate_not_after_timestamp_seconds{{path="{tmp_path}/odd\\"name.pem",'
        f'subject="CN=system:node:w1"}} {stamp}',
        f'ufcctl_certificate_not_after_timestamp_seconds{{path="{admin}",'
        f'subject="CN=kubernetes-admin"}} {stamp}',
    ]
    assert "# TYPE ufcctl_certificate_not_after_timestamp_seconds gauge" in text
    assert "broken.crt" in capsys.readouterr().err


def test_main_renames_a_world_readable_file_into_place(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cert = tmp_path / "ca.crt"
    cert.write_text(make_pem("ca", dt.datetime(2030, 1, 1, tzinfo=dt.UTC)))
    out = tmp_path / "textfile"
    out.mkdir()
    monkeypatch.setenv("UFC_TEXTFILE_DIR", str(out))
    monkeypatch.setenv("UFC_CERT_PATHS", f"{cert} {tmp_path}/nope.crt")
    assert script.main() == 0
    written = out / "ufcctl-certificates.prom"
    assert [p.name for p in out.iterdir()] == [written.name]  # no temporary file left
    assert stat.S_IMODE(written.stat().st_mode) == 0o644
    assert f'path="{cert}",subject="CN=ca"' in written.read_text()
