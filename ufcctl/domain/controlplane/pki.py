"""Whether the Kubernetes CA on the controller is the one kube_control_plane's tasks make.

The role makes it with community.crypto (tasks/pki_controller.yml) and runs those tasks only when
this says something differs, so a converged run does not pay four controller-side module runs to
hear "ok". What is compared is what those modules would act on: the directory's and files' modes,
an RSA 2048 key, and a self-signed certificate for that key with the request's subject and CA
extensions (community.crypto keeps a certificate whose key, subject and extensions still match).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

# what tasks/pki_controller.yml asks for
KEY_BITS = 2048
COMMON_NAME = "kubernetes"
MODES = {"ca.key": "0600", "ca.crt": "0644"}
DIRECTORY_MODE = "0700"


@dataclass(frozen=True)
class CaFiles:
    """The controller's CA directory as read by the role's lookup (None: absent or unreadable)."""

    directory_mode: str | None
    key: bytes | None
    cert: bytes | None
    modes: Mapping[str, str]


def _public(key: rsa.RSAPublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def ca_problems(files: CaFiles) -> list[str]:
    """What the role's controller-side CA tasks would change (empty: they can be skipped)."""
    if files.directory_mode != DIRECTORY_MODE:
        return [f"directory mode {files.directory_mode or 'absent'}, not {DIRECTORY_MODE}"]
    problems = [
        f"{name}: mode {files.modes.get(name) or 'absent'}, not {wanted}"
        for name, wanted in MODES.items()
        if files.modes.get(name) != wanted
    ]
    if problems or not (files.key and files.cert):
        return problems or ["ca.key or ca.crt is empty"]
    try:
        key = serialization.load_pem_private_key(files.key, password=None)
        cert = x509.load_pem_x509_certificate(files.cert)
    except (ValueError, TypeError) as err:
        return [f"unreadable key or certificate: {err}"]
    if not isinstance(key, rsa.RSAPrivateKey) or key.key_size != KEY_BITS:
        return [f"ca.key is not an RSA {KEY_BITS} key"]
    cert_key = cert.public_key()
    if not isinstance(cert_key, rsa.RSAPublicKey) or _public(cert_key) != _public(key.public_key()):
        problems.append("ca.crt is not for ca.key")
    names = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    if names != [COMMON_NAME] or cert.issuer != cert.subject:
        problems.append(f"ca.crt is not self-signed with CN={COMMON_NAME}")
    try:
        constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints)
        usage = cert.extensions.get_extension_for_class(x509.KeyUsage)
    except x509.ExtensionNotFound as err:
        return [*problems, f"ca.crt lacks an extension: {err}"]
    if not (constraints.critical and constraints.value.ca):
        problems.append("ca.crt is not a CA (basicConstraints CA:TRUE, critical)")
    wanted = (usage.value.digital_signature, usage.value.key_encipherment, usage.value.key_cert_sign)
    if not (usage.critical and all(wanted)):
        problems.append("ca.crt key usage is not digitalSignature, keyEncipherment, keyCertSign (critical)")
    return problems
