"""`ufcctl certs check|renew` for people: a headline with the counts, then one row per certificate."""

from __future__ import annotations

from ufcctl.domain.certs.check import CertReport, CertRow
from ufcctl.domain.certs.renew import KUBEADM, REGISTRY, RenewPlan, Step
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


def _days(left: int | None) -> str:
    return "-" if left is None else str(left)


def print_renew_plan(plan: RenewPlan, *, check: bool) -> None:
    """What renew does (or, with --check, would do): the steps, then one row per certificate."""
    basis = "forced" if plan.force else f"fewer than {plan.within_days} days left"
    for note in plan.notes:
        print(f"not renewable here: {note}")
    if plan.empty:
        print("nothing to renew: no certificate chosen" if plan.force else f"nothing to renew ({basis}): "
              f"every chosen certificate has at least {plan.within_days} days left"
              + (" or is the site's to renew (above)" if plan.notes else ""))
        return
    verb = "would renew" if check else "renewing"
    print(f"{verb} {plan.count} certificate(s) ({basis}), one host at a time: etcd (leaders last), then "
          "the control planes, then the registry caches")
    rows = [(i.host, i.path, _days(i.days_left), i.why, "1") for i in plan.controller]
    for n, step in enumerate(plan.steps, 1):
        print(f"  step {n}: {step.kind} {step.host}: {len(step.items)} certificate(s), {_restart(step)}"
              + (f" ({step.note})" if step.note else ""))
        rows += [(i.host, i.path, _days(i.days_left), i.why, str(n)) for i in step.items]
    print_table("", ["host", "path", "days left", "why", "step"], rows)


def _restart(step: Step) -> str:
    if step.kind == KUBEADM:
        return "kube-apiserver restarted out of haproxy's backends, back once UP"
    if step.kind == REGISTRY:
        return "its instances restarted one after the other (nodes use their next mirror meanwhile)"
    leads = f"; leads {', '.join(step.leads)}: leadership handed over first" if step.leads else ""
    return (f"restart etcd {', '.join(step.restart)} one at a time" if step.restart else "no restart") + leads


def print_renew_result(plan: RenewPlan, times: list[tuple[str, float]], seconds: float) -> None:
    """The plan as carried out, then the time per host (the app passes plain rows)."""
    print_renew_plan(plan, check=False)
    per_host = ", ".join(f"{host} {took:.1f} s" for host, took in times)
    print(f"renewed {plan.count} certificate(s) in {len(times)} step(s) in {seconds:.1f} s ({per_host})")
