"""Self-signed test certificates with a chosen lifetime (cryptography), as PEM text."""

from __future__ import annotations

import datetime as dt

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def make_pem(cn: str, not_after: dt.datetime, *, with_key: bool = False) -> str:
    """A certificate for CN=cn valid until not_after; with_key puts its private key after it, as the
    kubelet's kubelet-client-current.pem does."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    start = min(not_after, dt.datetime.now(dt.UTC)) - dt.timedelta(days=400)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(not_after)
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    if with_key:
        pem += key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption()).decode()
    return pem


def kubeconfig(cert_and_key_pem: str) -> str:
    """A kubeconfig as kubeadm writes admin.conf: the client certificate and key embedded (base64)."""
    import base64

    cert = cert_and_key_pem[:cert_and_key_pem.index("-----END CERTIFICATE-----") + 26]
    key = cert_and_key_pem[len(cert):]
    b64 = lambda text: base64.b64encode(text.encode()).decode()  # noqa: E731
    return ("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: "
            f"{b64('not this one')}\n    server: https://10.0.0.10:6443\n  name: k\nusers:\n- name: admin\n"
            f"  user:\n    client-certificate-data: {b64(cert)}\n    client-key-data: {b64(key)}\n")
