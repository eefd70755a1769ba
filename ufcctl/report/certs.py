"""`ufcctl certs check` for people: a headline with the counts, then one row per certificate."""

from __future__ import annotations

from ufcctl.domain.certs.check import CertReport, CertRow
from ufcctl.report.output import print_table

COLUMNS = ["host", "path", "subject", "issuer", "not after", "days left", "status"]


def _row(row: CertRow) -> tuple[str, ...]:
    status = row.status if not row.detail else f"{row.status}: {row.detail}"
    return (row.host, row.path, row.subject or "-", row.issuer or "-",
            row.not_after.strftime("%Y-%m-%d %H:%M:%SZ") if row.not_after else "-",
            "-" if row.days_left is None else str(row.days_left), status)


def print_certs(report: CertReport) -> None:
    counts = ", ".join(f"{n} {status}" for status, n in sorted(report.counts().items()))
    verdict = "ok" if report.passed else f"{len(report.failing)} need attention"
    print(f"{len(report.rows)} certificate(s), threshold {report.warn_days} days: {verdict} "
          f"({counts or 'none'})")
    if report.rows:
        print_table("", COLUMNS, [_row(r) for r in report.rows])
