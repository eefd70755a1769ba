"""Whether etcd's certificates on a node or on the controller are still the ones the role would issue.

roles/etcd probes each node once (certificate PEMs, the public halves of the keys, key file modes)
and asks these functions which certificates need issuing again, so a converged run skips the
key/CSR/sign steps entirely. The checks follow what community.crypto's ownca provider compares
before it re-signs (x509_certificate_pipe, ignore_timestamps: true): the certificate's public key
is the key's, subject and extensions (SANs, extended key usage) are the request's, the subject key
identifier is derived from the key, and the CA signed it (issuer, signature, authority key id).
Renewal (`ufcctl certs renew`) adds one more reason, never for a CA: fewer than `renew_days` days
left, or issued before `issued_before` (--force: the renewal run's start, so a member renewed earlier
in the same run is not signed twice). Such reasons start with RENEW; the role signs those again
with their existing key (community.crypto's `force`), the others only when the request changed.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

USAGES = {"serverAuth": ExtendedKeyUsageOID.SERVER_AUTH, "clientAuth": ExtendedKeyUsageOID.CLIENT_AUTH}
# what the role asks community.crypto.openssl_privatekey for (type: ECC, curve: secp256r1)
KEY_TYPE = ("EC", "secp256r1")
KEY_MODE = "0600"
# the modes the controller-side tasks give these files
CONTROLLER_MODES = {"ca.key": "0600", "ca.crt": "0644", "ufcctl.key": "0600", "ufcctl.crt": "0644"}
RENEW = "renew: "  # the prefix of a renewal reason (roles/etcd signs those with force)
EXTENSION_NAMES = {
    x509.oid.ExtensionOID.SUBJECT_ALTERNATIVE_NAME: "subject alternative names",
    x509.oid.ExtensionOID.EXTENDED_KEY_USAGE: "extended key usage",
}


@dataclass(frozen=True)
class CertRequest:
    """One certificate the role issues: what its CSR asks for."""

    name: str
    common_name: str
    sans: tuple[str, ...]  # "DNS:name" / "IP:address", in the CSR's order
    usages: tuple[str, ...]  # "serverAuth", "clientAuth"
    owner: str  # owner and group of the key file

    @classmethod
    def from_role(cls, entry: Mapping[str, Any]) -> CertRequest:
        return cls(
            name=str(entry["name"]),
            common_name=str(entry["cn"]),
            sans=tuple(str(s) for s in entry.get("sans") or ()),
            usages=tuple(str(u) for u in entry.get("usage") or ()),
            owner=str(entry["owner"]),
        )


def _public_pem(key: Any) -> bytes:
    return bytes(
        key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )


def _general_name(san: str) -> x509.GeneralName:
    kind, _, value = san.partition(":")
    if kind == "IP":
        return x509.IPAddress(ipaddress.ip_address(value))
    return x509.DNSName(value)


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    key = ca.public_key()
    algorithm = cert.signature_hash_algorithm
    try:
        if isinstance(key, ec.EllipticCurvePublicKey) and algorithm is not None:
            key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(algorithm))
        elif isinstance(key, rsa.RSAPublicKey) and algorithm is not None:
            key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), algorithm)
        else:
            return False
    except InvalidSignature:
        return False
    return True


def _extension_problems(cert: x509.Certificate, request: CertRequest) -> list[str]:
    identifiers = (x509.SubjectKeyIdentifier, x509.AuthorityKeyIdentifier)
    found = {ext.oid: ext for ext in cert.extensions if not isinstance(ext.value, identifiers)}
    wanted: dict[x509.ObjectIdentifier, x509.ExtensionType] = {}
    if request.sans:
        wanted[x509.oid.ExtensionOID.SUBJECT_ALTERNATIVE_NAME] = x509.SubjectAlternativeName(
            [_general_name(s) for s in request.sans]
        )
    if request.usages:
        wanted[x509.oid.ExtensionOID.EXTENDED_KEY_USAGE] = x509.ExtendedKeyUsage(
            [USAGES[u] for u in request.usages]
        )
    problems = []
    if set(found) != set(wanted):
        problems.append("other extensions than requested")
    for oid, value in wanted.items():
        if oid in found and (found[oid].value != value or found[oid].critical):
            problems.append(f"{EXTENSION_NAMES[oid]} differ from the request")
    return problems


def _identifier_problems(cert: x509.Certificate, ca: x509.Certificate) -> list[str]:
    problems = []
    try:
        ski = cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        if ski.digest != x509.SubjectKeyIdentifier.from_public_key(cert.public_key()).digest:  # type: ignore[arg-type]
            problems.append("subject key identifier does not match the key")
    except x509.ExtensionNotFound:
        problems.append("no subject key identifier")
    try:
        ca_ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        expected = x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski)
    except x509.ExtensionNotFound:
        expected = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.public_key())  # type: ignore[arg-type]
    try:
        if cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value != expected:
            problems.append("authority key identifier is not the CA's")
    except x509.ExtensionNotFound:
        problems.append("no authority key identifier")
    return problems


def certificate_problems(
    request: CertRequest, cert_pem: str | None, key_public_pem: str | None, ca_pem: str
) -> list[str]:
    """Why the certificate must be issued again (empty: keep it)."""
    if not key_public_pem:
        return ["no key"]
    if not cert_pem:
        return ["no certificate"]
    try:
        cert = x509.load_pem_x509_certificate(cert_pem.encode())
        ca = x509.load_pem_x509_certificate(ca_pem.encode())
    except ValueError as err:
        return [f"unreadable certificate: {err}"]
    problems = []
    if _public_pem(cert.public_key()).strip() != key_public_pem.encode().strip():
        problems.append("certificate is not for the key")
    if cert.subject != x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, request.common_name)]):
        problems.append(f"subject is not CN={request.common_name}")
    problems += _extension_problems(cert, request)
    if cert.issuer != ca.subject or not _signed_by(cert, ca):
        problems.append("not signed by the current CA")
    return problems + _identifier_problems(cert, ca)


@dataclass(frozen=True)
class Renewal:
    """When a certificate that still matches its request is signed again (`ufcctl certs renew`)."""

    days: int = 0  # fewer than this many days left (0: never for time)
    issued_before: dt.datetime | None = None  # notBefore earlier than this (--force)
    now: dt.datetime | None = None  # when judged (None: the current time)

    @classmethod
    def from_role(cls, days: Any, issued_before: Any, now: dt.datetime | None = None) -> Renewal:
        """The role's etcd_cert_renew_days and etcd_cert_renew_issued_before (ISO 8601, "" for none)."""
        text = str(issued_before or "").strip()
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
        if when is not None and when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        return cls(int(days or 0), when, now)


def renewal_reasons(cert_pem: str | None, renewal: Renewal | None) -> list[str]:
    """Why a certificate that matches its request is signed again (empty: it is not)."""
    if renewal is None or not cert_pem or (renewal.days <= 0 and renewal.issued_before is None):
        return []
    try:
        cert = x509.load_pem_x509_certificate(cert_pem.encode())
    except ValueError:
        return []  # certificate_problems already says it is unreadable
    now = renewal.now or dt.datetime.now(dt.UTC)
    reasons = []
    left = cert.not_valid_after_utc - now
    # the same comparison as `ufcctl certs check` (domain/certs/check.py judge): fewer than N days
    if renewal.days > 0 and left < dt.timedelta(days=renewal.days):
        reasons.append(f"{RENEW}{left.days} days left, fewer than {renewal.days}")
    if renewal.issued_before is not None and cert.not_valid_before_utc < renewal.issued_before:
        reasons.append(f"{RENEW}issued {cert.not_valid_before_utc:%Y-%m-%dT%H:%M:%SZ}, before "
                       f"{renewal.issued_before:%Y-%m-%dT%H:%M:%SZ} (forced)")
    return reasons


def key_problems(request: CertRequest, key: Mapping[str, Any] | None) -> list[str]:
    """What is wrong with the key file as the node probe saw it (type, owner, group, mode)."""
    if not key or not key.get("exists"):
        return ["no key"]
    problems = []
    if (key.get("type"), key.get("curve")) != KEY_TYPE:
        problems.append(f"key is {key.get('type')} {key.get('curve')}, not EC secp256r1")
    if key.get("mode") != KEY_MODE or key.get("owner") != request.owner or key.get("group") != request.owner:
        problems.append(f"key file is {key.get('owner')}:{key.get('group')} {key.get('mode')}")
    return problems


def certificates_to_issue(
    requests: Sequence[CertRequest], probed: Mapping[str, Mapping[str, Any]], ca_pem: str | None,
    renewal: Renewal | None = None,
) -> dict[str, list[str]]:
    """name -> reasons, for every certificate that needs its key fixed or a new signature."""
    out: dict[str, list[str]] = {}
    for request in requests:
        seen = probed.get(request.name) or {}
        key = seen.get("key") or {}
        problems = key_problems(request, key)
        if ca_pem is None:
            problems.append("no CA certificate on the controller yet")
        elif key.get("exists"):
            problems += certificate_problems(request, seen.get("cert"), key.get("public_key"), ca_pem)
        if not problems:
            problems = renewal_reasons(seen.get("cert"), renewal)
        if problems:
            out[request.name] = sorted(set(problems), key=problems.index)
    return out


@dataclass(frozen=True)
class ControllerFiles:
    """The controller's etcd PKI directory as read by the role (None: file absent)."""

    directory_mode: str | None
    ca_key: bytes | None
    ca_cert: bytes | None
    client_key: bytes | None
    client_cert: bytes | None
    modes: Mapping[str, str]  # file name -> octal mode string


def _private_public(data: bytes) -> bytes | None:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != KEY_TYPE[1]:
        return None
    return _public_pem(key.public_key())


def controller_problems(files: ControllerFiles, renewal: Renewal | None = None) -> list[str]:
    """What the role's controller-side CA tasks would change (empty: they can be skipped). A renewal
    applies to ufcctl's client certificate only: the CA is never made again here."""
    if files.directory_mode != "0700":
        return [f"directory mode {files.directory_mode or 'absent'}, not 0700"]
    problems = []
    for name, wanted in CONTROLLER_MODES.items():
        if files.modes.get(name) != wanted:
            problems.append(f"{name}: mode {files.modes.get(name) or 'absent'}, not {wanted}")
    if problems or not (files.ca_key and files.ca_cert and files.client_key and files.client_cert):
        return problems or ["a file is empty"]
    ca_public, client_public = _private_public(files.ca_key), _private_public(files.client_key)
    try:
        ca = x509.load_pem_x509_certificate(files.ca_cert)
        client = x509.load_pem_x509_certificate(files.client_cert)
    except ValueError as err:
        return [f"unreadable certificate: {err}"]
    if ca_public is None or _public_pem(ca.public_key()) != ca_public:
        problems.append("ca.crt is not for ca.key (or ca.key is not EC secp256r1)")
    if ca.subject != ca.issuer or not _signed_by(ca, ca):
        problems.append("ca.crt is not self-signed")
    if client_public is None or _public_pem(client.public_key()) != client_public:
        problems.append("ufcctl.crt is not for ufcctl.key (or ufcctl.key is not EC secp256r1)")
    if client.issuer != ca.subject or not _signed_by(client, ca):
        problems.append("ufcctl.crt is not signed by ca.crt")
    if not problems:
        problems = [f"ufcctl.crt: {r}" for r in renewal_reasons(files.client_cert.decode("ascii", "replace"),
                                                                 renewal)]
    return problems
