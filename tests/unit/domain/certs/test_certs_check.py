"""Judging one certificate (status, days left, threshold) and the report's JSON."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.helpers.certs import make_pem
from ufcctl.domain.certs.catalog import Expected
from ufcctl.domain.certs.check import (
    EXPIRED,
    MISSING,
    OK,
    SOON,
    UNREACHABLE,
    UNREADABLE,
    FileRead,
    days_left,
    first_certificate,
    host_rows,
    judge,
    report,
    unreachable_row,
)

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)
REQUIRED = Expected("cp1", "/etc/etcd/pki/member.crt", "etcd member", "etcd", True)
OPTIONAL = Expected("cp1", "/var/lib/kubelet/pki/kubelet.crt", "kubelet serving", "kubelet", False)


def _pem_days(days: float) -> str:
    return make_pem("cp1", NOW + dt.timedelta(days=days))


@pytest.mark.parametrize(
    ("days", "warn", "status", "left"),
    [
        pytest.param(400, 30, OK, 400, id="fresh"),
        pytest.param(30, 30, OK, 30, id="exactly-the-threshold-is-ok"),
        pytest.param(29.99, 30, SOON, 29, id="just-under-the-threshold"),
        pytest.param(0.5, 30, SOON, 0, id="hours-left"),
        pytest.param(-0.5, 30, EXPIRED, -1, id="expired-hours-ago"),
        pytest.param(-10, 0, EXPIRED, -10, id="expired-whatever-the-threshold"),
        pytest.param(400, 100000, SOON, 400, id="huge-threshold"),
        pytest.param(1, 0, OK, 1, id="threshold-zero"),
    ],
)
def test_status_and_days_left(days: float, warn: int, status: str, left: int) -> None:
    row = judge(REQUIRED, FileRead(REQUIRED.path, _pem_days(days)), NOW, warn)
    assert row is not None
    assert (row.status, row.days_left) == (status, left)
    assert row.subject == "CN=cp1" and row.issuer == "CN=cp1"


@pytest.mark.parametrize(
    ("expected", "read", "status"),
    [
        pytest.param(REQUIRED, None, MISSING, id="required-not-reported"),
        pytest.param(REQUIRED, FileRead(REQUIRED.path), MISSING, id="required-absent"),
        pytest.param(OPTIONAL, FileRead(OPTIONAL.path), None, id="optional-absent-not-listed"),
        pytest.param(OPTIONAL, FileRead(OPTIONAL.path, error="cannot read: Permission denied"), UNREADABLE,
                     id="optional-unreadable-is-listed"),
        pytest.param(REQUIRED, FileRead(REQUIRED.path, "-----BEGIN CERTIFICATE-----\nAAAA\n"
                                        "-----END CERTIFICATE-----\n"), UNREADABLE, id="garbage-pem"),
    ],
)
def test_files_that_are_not_good_certificates(expected: Expected, read: FileRead | None,
                                              status: str | None) -> None:
    row = judge(expected, read, NOW, 30)
    assert (row.status if row else None) == status
    if row is not None:
        assert row.detail  # says why


def test_first_certificate_never_keeps_a_key() -> None:
    pem = make_pem("kubelet", NOW + dt.timedelta(days=300), with_key=True)
    assert "PRIVATE KEY" in pem
    first = first_certificate("junk\n" + pem)
    assert first is not None and "PRIVATE KEY" not in first and first.startswith("-----BEGIN CERTIFICATE")
    assert first_certificate("no certificate here") is None
    assert first_certificate("-----BEGIN CERTIFICATE-----\nAAAA") is None  # cut off


def test_days_left_rounds_down() -> None:
    assert days_left(NOW + dt.timedelta(days=1, hours=23), NOW) == 1
    assert days_left(NOW - dt.timedelta(hours=1), NOW) == -1


def test_host_rows_keep_catalog_order_and_drop_absent_optionals() -> None:
    other = Expected("cp1", "/etc/etcd/pki/agent.crt", "agent", "etcd", True)
    reads = {REQUIRED.path: FileRead(REQUIRED.path, _pem_days(100)), OPTIONAL.path: FileRead(OPTIONAL.path),
             other.path: FileRead(other.path, _pem_days(5))}
    rows = host_rows([REQUIRED, OPTIONAL, other], reads, NOW, 30)
    assert [(r.path, r.status) for r in rows] == [(REQUIRED.path, OK), (other.path, SOON)]


def test_report_json_shape_and_verdict() -> None:
    good = judge(REQUIRED, FileRead(REQUIRED.path, _pem_days(100)), NOW, 30)
    assert good is not None
    passing = report([good], 30, NOW)
    assert passing.passed and passing.failing == []
    failing = report([good, unreachable_row("w1", "ssh: connection refused")], 30, NOW)
    assert not failing.passed and [r.host for r in failing.failing] == ["w1"]
    doc = failing.to_json()
    assert set(doc) == {"checked_at", "warn_days", "passed", "counts", "certificates"}
    assert doc["counts"] == {OK: 1, UNREACHABLE: 1} and doc["passed"] is False
    first = doc["certificates"][0]
    assert set(first) == {"host", "path", "what", "subject", "issuer", "not_after", "days_left", "status",
                          "detail", "sha256"}
    assert len(first["sha256"]) == 64
    assert first["not_after"] == (NOW + dt.timedelta(days=100)).isoformat() and first["days_left"] == 100
