"""`ufcctl certs check`'s judgement: a certificate's PEM in, one row out (subject, issuer, not-after,
days left, status), and whether the whole list passes."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes

from ufcctl.domain.certs.catalog import Expected

# 30 days: four weekly maintenance windows to run the renewal one member at a time before anything
# stops; the etcd certificates last 730 days (etcd_cert_days) and kubeadm's one year, so a warning
# comes at the latest at 92 % of kubeadm's lifetime and never on a freshly issued certificate.
DEFAULT_WARN_DAYS = 30

OK, SOON, EXPIRED, UNREADABLE, MISSING, UNREACHABLE = (
    "ok", "expires soon", "expired", "unreadable", "missing", "unreachable")
FAILING = frozenset({SOON, EXPIRED, UNREADABLE, MISSING, UNREACHABLE})
BEGIN = "-----BEGIN CERTIFICATE-----"


@dataclass(frozen=True)
class CertRow:
    host: str
    path: str
    what: str
    status: str
    subject: str = ""
    issuer: str = ""
    not_after: dt.datetime | None = None
    days_left: int | None = None
    detail: str = ""  # why unreadable, missing or unreachable
    sha256: str = ""  # of the certificate (DER), hex: which certificate it is (certs renew compares them)

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "path": self.path, "what": self.what, "subject": self.subject,
                "issuer": self.issuer,
                "not_after": self.not_after.isoformat() if self.not_after else None,
                "days_left": self.days_left, "status": self.status, "detail": self.detail,
                "sha256": self.sha256}


@dataclass(frozen=True)
class FileRead:
    """What a host said about one file: `pem` its first certificate block, None when the file is
    absent; `error` when it exists but could not be read."""

    path: str
    pem: str | None = None
    error: str = ""


def first_certificate(text: str) -> str | None:
    """The first PEM certificate block of a file's text (a kubelet .pem also holds its key: never
    kept), or None."""
    start = text.find(BEGIN)
    if start < 0:
        return None
    end = text.find("-----END CERTIFICATE-----", start)
    return None if end < 0 else text[start:end + len("-----END CERTIFICATE-----")] + "\n"


def sha256_of(cert: x509.Certificate) -> str:
    """Which certificate it is: its DER's sha256, hex (`certs check` shows it, `certs renew` compares)."""
    return cert.fingerprint(hashes.SHA256()).hex()


def days_left(not_after: dt.datetime, now: dt.datetime) -> int:
    """Whole days left, rounded down (an expired certificate's are negative)."""
    return math.floor((not_after - now).total_seconds() / 86400)


def judge(expected: Expected, read: FileRead | None, now: dt.datetime, warn_days: int) -> CertRow | None:
    """The row for one expected file; None for an optional file that is absent."""
    base = (expected.host, expected.path, expected.what)
    if read is None or (read.pem is None and not read.error):
        if not expected.required:
            return None
        return CertRow(*base, status=MISSING, detail=f"not found (issued by {expected.issuer})")
    if read.error:
        return CertRow(*base, status=UNREADABLE, detail=read.error)
    try:
        cert = x509.load_pem_x509_certificate((read.pem or "").encode())
        not_after = cert.not_valid_after_utc
        subject, issuer = cert.subject.rfc4514_string(), cert.issuer.rfc4514_string()
        digest = sha256_of(cert)
    except ValueError as err:
        return CertRow(*base, status=UNREADABLE, detail=f"not a certificate: {str(err)[:200]}")
    left = days_left(not_after, now)
    if not_after <= now:
        status = EXPIRED
    elif not_after - now < dt.timedelta(days=warn_days):
        status = SOON
    else:
        status = OK
    return CertRow(*base, status=status, subject=subject, issuer=issuer, not_after=not_after, days_left=left,
                   sha256=digest)


def host_rows(expected: Sequence[Expected], reads: Mapping[str, FileRead], now: dt.datetime,
              warn_days: int) -> list[CertRow]:
    """One host's rows, in catalog order."""
    rows = (judge(e, reads.get(e.path), now, warn_days) for e in expected)
    return [r for r in rows if r is not None]


def unreachable_row(host: str, message: str) -> CertRow:
    return CertRow(host=host, path="-", what="(host)", status=UNREACHABLE, detail=message[:300])


@dataclass(frozen=True)
class CertReport:
    rows: tuple[CertRow, ...]
    warn_days: int
    checked_at: dt.datetime

    @property
    def failing(self) -> list[CertRow]:
        return [r for r in self.rows if r.status in FAILING]

    @property
    def passed(self) -> bool:
        return not self.failing

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.rows:
            out[row.status] = out.get(row.status, 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {"checked_at": self.checked_at.isoformat(), "warn_days": self.warn_days,
                "passed": self.passed, "counts": self.counts(),
                "certificates": [r.to_json() for r in self.rows]}


def report(rows: Iterable[CertRow], warn_days: int, now: dt.datetime) -> CertReport:
    return CertReport(tuple(rows), warn_days, now)
