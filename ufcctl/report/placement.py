"""Rendering a placement Report: JSON for machines, text grouped by job for people."""

from __future__ import annotations

import json

from ufcctl.domain.placement import ERROR, Report, Violation


def render_json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2)


def render_text(report: Report) -> str:
    checked = report.checked
    errors = sum(1 for violation in report.violations if violation.severity == ERROR)
    warnings = len(report.violations) - errors
    verdict = "valid" if report.valid else "INVALID"
    lines = [
        f"placement {verdict}: {errors} error(s), {warnings} warning(s); checked {checked.nodes} node(s), "
        f"{checked.pods} pod(s), {checked.jobs} NPU job(s)"
    ]
    by_job: dict[str | None, list[Violation]] = {}
    for violation in report.violations:
        by_job.setdefault(violation.job, []).append(violation)
    for job, violations in sorted(by_job.items(), key=lambda item: (item[0] is None, item[0] or "")):
        lines.append("")
        lines.append(f"job {job}" if job else "no job (standalone pods)")
        for violation in violations:
            where = " ".join(
                part
                for part in (
                    f"pod {violation.pod}" if violation.pod else "",
                    f"node {violation.node}" if violation.node else "",
                )
                if part
            )
            prefix = f"  {violation.severity:<7} {violation.code.value:<17}"
            lines.append(
                f"{prefix} {where}: {violation.message}" if where else prefix + " " + violation.message
            )
    return "\n".join(lines)
