"""The defrag agent's last result as Prometheus text-format gauges (node exporter textfile collector).

Pure text in, text out: the agent (ufcctl.nodeside.etcd_agent) reads the previous file, calls
`render` and replaces the file atomically. The gauges feed two alerts:

- EtcdDefragFailing: `ufcctl_etcd_defrag_last_result == 0`;
- EtcdDefragOverdue: `time() - ufcctl_etcd_defrag_last_success_timestamp_seconds > N`.

A run is a success when it finished without a failed member: a run that found nothing due (every
member skipped) is a success, because Overdue means "the agent has not run successfully lately",
not "no member needed a defrag".

The success timestamp is carried over from the previous file on a failed run (a failure must not
reset the Overdue clock), and is left out entirely while the member never succeeded: a sample of 0
would make Overdue fire at once on a freshly installed member, next to the Failing alert that
already says what is wrong (a member that never succeeded has failed at least once).

Runs on the nodes: standard library only (ufcctl/nodeside/__init__.py).
"""

from __future__ import annotations

import math
import re

PREFIX = "ufcctl_etcd_defrag_"
LAST_RUN = PREFIX + "last_run_timestamp_seconds"
LAST_SUCCESS = PREFIX + "last_success_timestamp_seconds"
LAST_DURATION = PREFIX + "last_duration_seconds"
LAST_RESULT = PREFIX + "last_result"

HELP = {
    LAST_RUN: "Start of the etcd defrag agent's last run, unix seconds.",
    LAST_SUCCESS: "Start of the etcd defrag agent's last successful run, unix seconds "
    "(absent until one succeeds).",
    LAST_DURATION: "Duration of the etcd defrag agent's last run, seconds.",
    LAST_RESULT: "Result of the etcd defrag agent's last run: 1 finished without failure, 0 failed.",
}

# one sample line: name, optional {labels}, value (the text format's optional timestamp is not used)
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)$")


def file_name(cluster: str) -> str:
    """The file in the textfile directory: one per cluster, since a member runs one agent per cluster."""
    return f"ufcctl-etcd-defrag-{cluster}.prom"


def escape_label_value(value: str) -> str:
    """Label value escaping of the text exposition format: backslash, double quote, line feed."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    # milliseconds are plenty for run times and durations; repr keeps plain decimals (no exponent)
    # for every value below 1e16
    return repr(round(float(value), 3))


def previous_success(text: str | None, name: str = LAST_SUCCESS) -> float | None:
    """The success timestamp recorded in a previous file, or None (no file, no sample, garbage).
    `name`: the gauge holding it (the snapshot program's file has its own, nodeside/etcd_backup.py).

    Matches by metric name only: the file belongs to one cluster and member, and a relabel (renamed
    member) should not lose the last success."""
    if not text:
        return None
    for line in text.splitlines():
        match = _SAMPLE.match(line.strip())
        if match is None or match["name"] != name:
            continue
        try:
            value = float(match["value"])
        except ValueError:
            return None
        return value if math.isfinite(value) and value > 0 else None
    return None


def render(
    cluster: str,
    member: str,
    started: float,
    duration: float,
    ok: bool,
    previous: str | None,
) -> str:
    """The whole file after one run that started at `started` (unix seconds) and took `duration`."""
    labels = f'{{etcd_cluster="{escape_label_value(cluster)}",member="{escape_label_value(member)}"}}'
    success = started if ok else previous_success(previous)
    values: dict[str, float | None] = {
        LAST_RUN: started,
        LAST_SUCCESS: success,
        LAST_DURATION: max(duration, 0.0),
        LAST_RESULT: 1 if ok else 0,
    }
    lines: list[str] = []
    for name, value in values.items():
        # HELP/TYPE stay even without a sample: harmless for the collector, and the file always
        # documents every gauge the alerts use
        lines.append(f"# HELP {name} {HELP[name]}")
        lines.append(f"# TYPE {name} gauge")
        if value is not None:
            lines.append(f"{name}{labels} {_number(value)}")
    return "\n".join(lines) + "\n"


def parse_samples(text: str) -> dict[str, tuple[str, float]]:
    """name -> (raw label text, value) for each sample line; ValueError on a line that is neither a
    comment nor `name{labels} value`. Used by the tests and to check a file by hand."""
    samples: dict[str, tuple[str, float]] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            raise ValueError(f"not a sample line: {line!r}")
        samples[match["name"]] = (match["labels"] or "", float(match["value"]))
    return samples
