"""ufcctl/domain/etcd/pki.py: when the etcd role keeps a node's or the controller's certificates and
when it issues them again, on certificates shaped as community.crypto's ownca provider makes them."""

from __future__ import annotations

import datetime
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ufcctl.domain.etcd.pki import (
    CertRequest,
    ControllerFiles,
    Renewal,
    certificate_problems,
    certificates_to_issue,
    controller_problems,
)

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)
MEMBER = CertRequest(
    name="member",
    common_name="cp1",
    sans=("DNS:cp1", "DNS:localhost", "IP:127.0.0.1", "IP:10.0.0.11"),
    usages=("serverAuth", "clientAuth"),
    owner="etcd",
)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(key: ec.EllipticCurvePrivateKey, cn: str = "ufcctl etcd CA") -> x509.Certificate:
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW)
        .not_valid_after(NOW + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    return builder.sign(key, hashes.SHA256())


def _leaf(
    key: ec.EllipticCurvePrivateKey,
    ca_key: ec.EllipticCurvePrivateKey,
    ca: x509.Certificate,
    request: CertRequest = MEMBER,
    sans: tuple[str, ...] | None = None,
) -> x509.Certificate:
    """A certificate as x509_certificate_pipe (ownca) signs the role's CSR: CSR subject and
    extensions, plus subject and authority key identifiers."""
    names = [
        x509.IPAddress(ipaddress.ip_address(s[3:])) if s.startswith("IP:") else x509.DNSName(s[4:])
        for s in (request.sans if sans is None else sans)
    ]
    usages = {"serverAuth": ExtendedKeyUsageOID.SERVER_AUTH, "clientAuth": ExtendedKeyUsageOID.CLIENT_AUTH}
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(request.common_name))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW)
        .not_valid_after(NOW + datetime.timedelta(days=730))
        .add_extension(x509.ExtendedKeyUsage([usages[u] for u in request.usages]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(
                ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
            ),
            critical=False,
        )
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _public(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


@pytest.fixture(scope="module")
def pki() -> dict[str, object]:
    ca_key, key = _key(), _key()
    ca = _ca(ca_key)
    return {"ca_key": ca_key, "ca": ca, "key": key, "cert": _leaf(key, ca_key, ca)}


def test_a_certificate_matching_its_request_key_and_ca_is_kept(pki) -> None:
    assert certificate_problems(MEMBER, _pem(pki["cert"]), _public(pki["key"]), _pem(pki["ca"])) == []


def test_a_client_certificate_without_sans_is_kept(pki) -> None:
    agent = CertRequest("agent", "ufcctl-etcd-agent-cp1", (), ("clientAuth",), "etcd")
    cert = _leaf(pki["key"], pki["ca_key"], pki["ca"], agent)
    assert certificate_problems(agent, _pem(cert), _public(pki["key"]), _pem(pki["ca"])) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        pytest.param("other-key", "certificate is not for the key", id="key-replaced"),
        pytest.param("moved", "subject alternative names differ from the request", id="address-changed"),
        pytest.param("other-ca", "not signed by the current CA", id="ca-replaced"),
        pytest.param("renamed", "subject is not CN=cp1", id="host-renamed"),
    ],
)
def test_a_stale_certificate_is_issued_again(pki, change: str, problem: str) -> None:
    key, ca, ca_key = pki["key"], pki["ca"], pki["ca_key"]
    if change == "other-key":
        cert, key = pki["cert"], _key()
    elif change == "moved":
        cert = _leaf(key, ca_key, ca, sans=(*MEMBER.sans[:3], "IP:10.0.0.99"))
    elif change == "other-ca":
        other_key = _key()
        other = _ca(other_key)
        cert = _leaf(key, other_key, other)
    else:
        renamed = CertRequest("member", "old-name", MEMBER.sans, MEMBER.usages, "etcd")
        cert = _leaf(key, ca_key, ca, renamed)
    problems = certificate_problems(MEMBER, _pem(cert), _public(key), _pem(ca))
    assert problem in problems, problems


def test_missing_or_unreadable_files_are_issued(pki) -> None:
    ca = _pem(pki["ca"])
    assert certificate_problems(MEMBER, None, _public(pki["key"]), ca) == ["no certificate"]
    assert certificate_problems(MEMBER, _pem(pki["cert"]), None, ca) == ["no key"]
    assert certificate_problems(MEMBER, "not a pem", _public(pki["key"]), ca)[0].startswith("unreadable")


def _key_seen(key: object, **attributes: str) -> dict[str, object]:
    seen = {
        "exists": True,
        "mode": "0600",
        "owner": "etcd",
        "group": "etcd",
        "type": "EC",
        "curve": "secp256r1",
    }
    return seen | {"public_key": _public(key)} | attributes  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("attributes", "problem"),
    [
        pytest.param({"mode": "0644"}, "key file is etcd:etcd 0644", id="mode"),
        pytest.param({"owner": "root"}, "key file is root:etcd 0600", id="owner"),
        pytest.param(
            {"type": "RSAPrivateKey", "curve": None}, "key is RSAPrivateKey None, not EC secp256r1", id="rsa"
        ),
    ],
)
def test_a_key_file_with_the_wrong_mode_owner_or_type_is_fixed(pki, attributes, problem) -> None:
    seen = {"member": {"cert": _pem(pki["cert"]), "key": _key_seen(pki["key"], **attributes)}}
    assert certificates_to_issue([MEMBER], seen, _pem(pki["ca"])) == {"member": [problem]}


def test_certificates_to_issue_names_only_the_stale_ones(pki) -> None:
    agent = CertRequest("agent", "ufcctl-etcd-agent-cp1", (), ("clientAuth",), "etcd")
    seen = {
        "member": {"cert": _pem(pki["cert"]), "key": _key_seen(pki["key"])},
        "agent": {"cert": None, "key": _key_seen(pki["key"])},
    }
    assert certificates_to_issue([MEMBER, agent], seen, _pem(pki["ca"])) == {"agent": ["no certificate"]}
    assert certificates_to_issue([MEMBER], {}, _pem(pki["ca"])) == {"member": ["no key"]}
    assert certificates_to_issue([MEMBER], seen, None)["member"] == [
        "no CA certificate on the controller yet"
    ]


def _key_pem(key: object) -> bytes:
    return key.private_bytes(  # type: ignore[attr-defined, no-any-return]
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _controller(pki, **changes: object) -> ControllerFiles:
    client_key = _key()
    client = _leaf(
        client_key, pki["ca_key"], pki["ca"], CertRequest("ufcctl", "ufcctl", (), ("clientAuth",), "")
    )
    files = {
        "directory_mode": "0700",
        "ca_key": _key_pem(pki["ca_key"]),
        "ca_cert": _pem(pki["ca"]).encode(),
        "client_key": _key_pem(client_key),
        "client_cert": _pem(client).encode(),
        "modes": {"ca.key": "0600", "ca.crt": "0644", "ufcctl.key": "0600", "ufcctl.crt": "0644"},
    }
    return ControllerFiles(**(files | changes))  # type: ignore[arg-type]


def test_a_complete_controller_pki_needs_nothing(pki) -> None:
    assert controller_problems(_controller(pki)) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        pytest.param({"directory_mode": None}, "directory mode absent, not 0700", id="no-directory"),
        pytest.param(
            {"modes": {"ca.crt": "0644", "ufcctl.key": "0600", "ufcctl.crt": "0644"}},
            "ca.key: mode absent, not 0600",
            id="ca-key-missing",
        ),
        pytest.param(
            {"ca_key": "other"},
            "ca.crt is not for ca.key (or ca.key is not EC secp256r1)",
            id="ca-key-replaced",
        ),
        pytest.param(
            {"client_cert": "other-ca"}, "ufcctl.crt is not signed by ca.crt", id="client-of-another-ca"
        ),
    ],
)
def test_a_broken_controller_pki_runs_the_controller_tasks(pki, change, problem) -> None:
    if change.get("ca_key") == "other":
        change = {"ca_key": _key_pem(_key())}
    if change.get("client_cert") == "other-ca":
        other_key = _key()
        other = _ca(other_key)
        client = _leaf(_key(), other_key, other, CertRequest("ufcctl", "ufcctl", (), ("clientAuth",), ""))
        change = {"client_cert": _pem(client).encode()}
    assert problem in controller_problems(_controller(pki, **change))


# ---- renewal (`ufcctl certs renew`): a certificate that matches its request, signed again -----------

def _seen(pki) -> dict[str, object]:
    return {"member": {"cert": _pem(pki["cert"]), "key": _key_seen(pki["key"])}}


@pytest.mark.parametrize(
    ("renewal", "reasons"),
    [
        pytest.param(Renewal(30, None, NOW + DAY * 710), ["renew: 20 days left, fewer than 30"],
                     id="within-days"),
        pytest.param(Renewal(30, None, NOW + DAY * 731), ["renew: -1 days left, fewer than 30"],
                     id="expired"),
        pytest.param(Renewal(30, None, NOW + DAY * 699), [], id="not-yet"),
        pytest.param(Renewal(0, NOW + datetime.timedelta(seconds=1), NOW),
                     ["renew: issued 2026-01-01T00:00:00Z, before 2026-01-01T00:00:01Z (forced)"],
                     id="forced"),
        # the run's start: what this run signed already is not signed twice
        pytest.param(Renewal(0, NOW, NOW), [], id="forced-issued-in-this-run"),
        pytest.param(Renewal(), [], id="a-deploy"),
    ],
)
def test_a_matching_certificate_is_renewed_only_when_told(pki, renewal: Renewal, reasons: list[str]) -> None:
    got = certificates_to_issue([MEMBER], _seen(pki), _pem(pki["ca"]), renewal)
    assert got == ({"member": reasons} if reasons else {})


def test_a_stale_certificate_keeps_its_own_reasons_under_a_renewal(pki) -> None:
    other_key = _key()
    cert = _leaf(pki["key"], other_key, _ca(other_key))
    seen = {"member": {"cert": _pem(cert), "key": _key_seen(pki["key"])}}
    reasons = certificates_to_issue([MEMBER], seen, _pem(pki["ca"]), Renewal(0, NOW + DAY))
    assert "not signed by the current CA" in reasons["member"]
    assert not any(r.startswith("renew: ") for r in reasons["member"])  # no force: the request changed


def test_the_role_settings_parse() -> None:
    assert Renewal.from_role("30", "") == Renewal(30, None)
    assert Renewal.from_role(0, "2026-11-28T19:30:00Z").issued_before == datetime.datetime(
        2026, 11, 28, 19, 30, tzinfo=datetime.UTC)
    assert Renewal.from_role(None, "2026-11-28T19:30:00").issued_before.tzinfo == datetime.UTC


def test_the_controller_renews_ufcctls_certificate_never_the_ca(pki) -> None:
    # 4000 days: more than the CA's 3650 too; still only the client certificate is named
    far = Renewal(4000, None, NOW)
    assert controller_problems(_controller(pki), far) == ["ufcctl.crt: renew: 730 days left, fewer than 4000"]
    assert controller_problems(_controller(pki), Renewal(30, None, NOW)) == []
    # a broken PKI is reported as before, never as a renewal
    broken = _controller(pki, directory_mode=None)
    assert controller_problems(broken, far) == ["directory mode absent, not 0700"]
