"""What kubeadm's callers share: the discovery hash of a CA and a failure message with secrets masked.

Used by roles/kube_control_plane (init and control-plane joins) and roles/kube_node (worker joins,
the join token) through their filter plugins.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

# Lines of kubeadm's output kept in a failure message: its error is at the end.
KUBEADM_TAIL_LINES = 30
# kubeadm's bootstrap token format (kubeadm docs "Bootstrap tokens"): id.secret
TOKEN = re.compile(r"^[a-z0-9]{6}\.[a-z0-9]{16}$")


def ca_hash(pem: str) -> str:
    """kubeadm's discovery hash: sha256 of the CA's DER SubjectPublicKeyInfo, as `sha256:<hex>`
    (docs/reference/nodes-observability-images.md §2: the same as openssl's pkey -pubin -outform DER)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert = x509.load_pem_x509_certificate(str(pem).encode())
    spki = cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return "sha256:" + hashlib.sha256(spki).hexdigest()


def failure_message(result: Mapping[str, Any], secrets: Sequence[str]) -> str:
    """What a no_log kubeadm task may show when it failed: rc, command and output, every secret masked."""
    argv = result.get("cmd") or []
    command = " ".join(argv) if isinstance(argv, list) else str(argv)
    lines = (str(result.get("stdout") or "") + "\n" + str(result.get("stderr") or "")).strip().splitlines()
    text = "\n".join(lines[-KUBEADM_TAIL_LINES:]) or str(result.get("msg") or "no output")
    for secret in secrets:
        if secret:
            text = text.replace(str(secret), "<masked>")
            command = command.replace(str(secret), "<masked>")
    return f"{command} failed (rc {result.get('rc')}):\n{text}"


def token_secret(token: str) -> str:
    """The secret half of a bootstrap token (its id is public): what logs must never show."""
    return token.split(".", 1)[1] if TOKEN.match(token or "") else token
