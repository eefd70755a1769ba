"""What kubeadm's callers share: the discovery hash of a CA and a failure message with secrets masked.

Used by roles/kube_control_plane (init and control-plane joins) and roles/kube_node (worker joins,
the join token) through their filter plugins.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
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


# kubeadm join reads the cluster's configuration through the VIP in its preflight phase, before it writes
# anything on the node; an apiserver slow or restarting under load then fails the join with one of these
# (seen on the lab at load 33: "Client.Timeout exceeded while awaiting headers" reading the kube-proxy
# ConfigMap). Such a join can simply run again.
TRANSIENT_API_ERRORS = ("Client.Timeout exceeded", "context deadline exceeded", "connection refused",
                        "connection reset by peer", "i/o timeout", "TLS handshake timeout", ": EOF",
                        "http2: client connection lost", "the server was unable to return a response")


def join_retryable(result: Mapping[str, Any]) -> bool:
    """A failed `kubeadm join` that stopped in its preflight phase on a network error talking to the API:
    nothing was written on the node, so it may run again. A preflight check that failed (a port in use,
    swap on) or any later phase is never retried."""
    if result.get("rc") in (0, None):
        return False
    text = str(result.get("stdout") or "") + "\n" + str(result.get("stderr") or "")
    return ("error execution phase preflight" in text
            and any(marker in text for marker in TRANSIENT_API_ERRORS)
            and "[ERROR " not in text)


def token_secret(token: str) -> str:
    """The secret half of a bootstrap token (its id is public): what logs must never show."""
    return token.split(".", 1)[1] if TOKEN.match(token or "") else token


def token_objects(output: str) -> list[dict[str, Any]]:
    """`kubeadm token list -o json`: its BootstrapToken objects (kubeadm prints one JSON object per token,
    indented and concatenated); anything without a well-formed token is skipped, and the reading stops at
    a warning line or cut output, keeping what was read so far."""
    decoder, text, at = json.JSONDecoder(), str(output or ""), 0
    found: list[dict[str, Any]] = []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return found
        try:
            obj, at = decoder.raw_decode(text, at)
        except ValueError:
            return found
        if isinstance(obj, dict) and TOKEN.match(str(obj.get("token") or "")):
            found.append(obj)


def listed_tokens(output: str) -> dict[str, datetime | None]:
    """`kubeadm token list -o json`: token id -> expiry (None: never expires); an unreadable expiry skips
    its token."""
    found: dict[str, datetime | None] = {}
    for obj in token_objects(output):
        expires = obj.get("expires")
        token_id = str(obj["token"]).split(".", 1)[0]
        try:
            found[token_id] = datetime.fromisoformat(str(expires)) if expires else None
        except ValueError:
            continue
    return found


def token_state(output: str, token: str, now: datetime, margin_seconds: float) -> str:
    """Whether the cluster still accepts `token` for longer than the margin, from `kubeadm token list -o
    json`: "valid", "expiring" (listed, but expired or within the margin: delete it before making it
    again, kubeadm refuses an id that exists) or "missing" (the token cleaner removed it, or never made)."""
    tokens = listed_tokens(output)
    token_id = str(token).split(".", 1)[0]
    if token_id not in tokens:
        return "missing"
    expires = tokens[token_id]
    if expires is None or (expires - now).total_seconds() > margin_seconds:
        return "valid"
    return "expiring"
