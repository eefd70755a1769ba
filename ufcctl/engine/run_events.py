"""The event sink of an Ansible run: ansible-runner's events folded into per-host results as they
arrive, told to a RunObserver, failures appended to `failures.jsonl`.

Disk use: ansible-runner writes every event twice (a partial file, then a final job event file),
which for 16,000 hosts x 30 tasks is about a million files (docs/reference/scale.md §4). The event
handler here returns False, so runner deletes each partial and writes no final file; ufcctl keeps
only `summary.json` (one record per host, engine/runner.py) and `failures.jsonl` (one line per
failed or unreachable host-task, messages truncated). Measured bytes per host-task are noted in
README ("Artifacts").
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from ufcctl.domain.urls import mask
from ufcctl.engine.files import open_append
from ufcctl.engine.run_result import HostResult, RunResult

log = logging.getLogger(__name__)

# Messages kept per failure: enough to read the cause, bounded so 16k failures stay small.
MAX_MESSAGE_CHARS = 2000

# Lines of Ansible's own output kept for error messages (a syntax error prints a few lines).
TAIL_LINES = 40

# Tasks Ansible inserts itself and runs whatever --tags says: a role's argument check (tagged
# `always`) and implicit fact gathering. They do not count as work done on a host.
IMPLICIT_ACTIONS = frozenset({
    "ansible.builtin.validate_argument_spec", "validate_argument_spec",
    "ansible.builtin.gather_facts", "gather_facts",
})
IMPLICIT_TASKS = frozenset({"Gathering Facts"})
# What failures.jsonl and summary.json keep of a `no_log: true` task's result: Ansible's own
# censored note, never its msg/stdout/stderr.
NO_LOG_MESSAGE = "output hidden: the task has no_log: true"


class RunObserver(Protocol):
    """Receives a run's events as they happen (called from ansible-runner's reader thread)."""

    def run_started(self, run_id: str, hosts: list[str]) -> None: ...

    def task_started(self, run_id: str, task: str) -> None: ...

    def host_task_done(self, run_id: str, host: str, task: str, status: str, message: str | None) -> None: ...

    def run_finished(self, result: RunResult) -> None: ...


# Gets each successful host-task's result as it arrives (host, result): a read-only command's data
# (`ufcctl certs check`), folded at once so a run over 16,000 hosts never holds every result.
ResultHandler = Callable[[str, Mapping[str, Any]], None]


class EventSink:
    """Folds ansible-runner events into per-host results; keeps only failures on disk."""

    def __init__(self, run_id: str, run_dir: Path, observer: RunObserver | None,
                 on_result: ResultHandler | None = None):
        self.run_id = run_id
        self.observer = observer
        self.on_result = on_result
        self.hosts: dict[str, HostResult] = {}
        self.stats: dict[str, dict[str, int]] | None = None
        self.task = ""
        # the last lines Ansible printed outside host results (syntax errors, warnings), for messages
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.skipped_steps: list[dict[str, str]] = []
        self._failures = os.fdopen(open_append(run_dir / "failures.jsonl"), "a", encoding="utf-8")
        self._lock = threading.Lock()

    def close(self) -> None:
        self._failures.close()

    def _result(self, host: str) -> HostResult:
        result = self.hosts.get(host)
        if result is None:
            result = self.hosts[host] = HostResult(host)
        return result

    def __call__(self, event: dict[str, Any]) -> bool:
        try:
            self._handle(event)
        except Exception:  # never let a display problem break the run
            log.exception("event handler failed on %s", event.get("event"))
        return False  # do not write job_events/*.json: see module docstring

    def _handle(self, event: dict[str, Any]) -> None:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        if kind == "playbook_on_task_start":
            self.task = data.get("task", "") or data.get("name", "")
            if self.observer:
                self.observer.task_started(self.run_id, self.task)
            return
        if kind in ("verbose", "error", "warning", "deprecated") and event.get("stdout"):
            self.tail.extend(str(event["stdout"]).splitlines())
            return
        if kind == "playbook_on_stats":
            self.stats = {
                key: dict(data.get(key) or {})
                for key in ("ok", "changed", "failures", "dark", "skipped", "ignored", "rescued")
            }
            return
        if kind.startswith("runner_on_") and kind != "runner_on_start" and data.get("host"):
            self._host_event(kind, data)

    def _host_event(self, kind: str, data: dict[str, Any]) -> None:
        """A host-task's result: counted on its host, a failure kept, the observer told."""
        host = data["host"]
        res = data.get("res") or {}
        task = data.get("task") or self.task
        with self._lock:
            result = self._result(host)
            message: str | None = None
            if kind == "runner_on_ok":
                status = "changed" if res.get("changed") else "ok"
                message = skipped_step(res)
                if message is not None:
                    self.skipped_steps.append({"host": host, "task": task, "message": message})
            elif kind == "runner_on_skipped":
                status = "skipped"
            elif kind == "runner_on_unreachable":
                status = "unreachable"
                message = _message(res)
            elif kind == "runner_on_failed":
                status = "ok" if data.get("ignore_errors") else "failed"
                message = _message(res) if status == "failed" else None
            else:
                return
            if status != "skipped" and not _implicit(data, task):
                result.ran += 1
            failure = message is not None and status in ("failed", "unreachable")
            if failure and result.failed_task is None:
                result.failed_task, result.message = task, message
            if failure:
                line = {"host": host, "task": task, "status": status, "message": message}
                self._failures.write(json.dumps(line) + "\n")
                self._failures.flush()
        if self.on_result and kind == "runner_on_ok" and not _no_log(res):
            self.on_result(host, res)
        if self.observer:
            self.observer.host_task_done(self.run_id, host, task, status, message)

    def finalize(self) -> None:
        """Take the authoritative per-host counts from playbook_on_stats when it arrived."""
        if not self.stats:
            return
        names = set().union(*(set(v) for v in self.stats.values()))
        for host in names:
            result = self._result(host)
            result.ok = self.stats["ok"].get(host, 0)
            result.changed = self.stats["changed"].get(host, 0)
            result.failed = self.stats["failures"].get(host, 0)
            result.skipped = self.stats["skipped"].get(host, 0)
            result.unreachable = self.stats["dark"].get(host, 0) > 0


# A role says a step did not run, and why, in its task's message: "<step> SKIPPED ..." (roles' debug
# reports, k8s_manifests' `apply SKIPPED`). Whole word, upper case: Ansible's own "skipping" is not it.
_SKIPPED = re.compile(r"\bSKIPPED\b")


def skipped_step(res: Mapping[str, Any]) -> str | None:
    """The first line of a task result's message that reports a step SKIPPED (None: it does not)."""
    msg = res.get("msg")
    if not isinstance(msg, str) or not _SKIPPED.search(msg):
        return None
    line = next(ln for ln in msg.splitlines() if _SKIPPED.search(ln))
    return " ".join(line.split())[:300]


def _implicit(data: Mapping[str, Any], task: str) -> bool:
    action = data.get("resolved_action") or data.get("task_action") or ""
    return action in IMPLICIT_ACTIONS or (task in IMPLICIT_TASKS and action.endswith("setup"))


def _no_log(res: Mapping[str, Any]) -> bool:
    """Ansible replaces a no_log result with {"censored": ...}; `_ansible_no_log` marks the rest."""
    return "censored" in res or bool(res.get("_ansible_no_log"))


def _message(res: Mapping[str, Any]) -> str:
    if _no_log(res):
        return NO_LOG_MESSAGE
    items = res.get("results")
    if isinstance(items, list):
        # a loop: Ansible's own msg says only "One or more items failed", or "All items completed"
        # when the items were unreachable rather than failed; the first such item has the reason
        failed = next((i for i in items if isinstance(i, Mapping)
                       and (i.get("failed") or i.get("unreachable"))), None)
        if failed is not None:
            return _message(failed)
    parts = [str(res.get("msg") or "").strip()]
    url = res.get("url") or res.get("dest_url")
    if isinstance(url, str) and url and url not in parts[0]:
        # get_url and uri fail with "Request failed" and keep the URL in a field of their own
        parts[0] = f"{parts[0]} (URL {mask(url)})"
    for key in ("stderr", "stdout"):
        text = str(res.get(key) or "").strip()
        if text and text not in parts[0]:
            parts.append(text)
    message = " | ".join(p for p in parts if p) or "failed (no message)"
    return message[:MAX_MESSAGE_CHARS]
