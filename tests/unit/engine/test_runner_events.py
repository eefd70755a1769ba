"""The event sink of engine/run_events.py on synthesised ansible-runner events: which message a host's
failure keeps (summary.json, failures.jsonl and the printed recap all take it from here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ufcctl.engine.run_events import EventSink

REASON = "Failed to connect to the host via ssh: ssh: connect to host n1 port 22: No route to host"

# (kind of event, Ansible's `res`, the message the host must keep)
CASES: dict[str, tuple[str, dict[str, Any], str]] = {
    "unreachable-loop-item": (
        "runner_on_unreachable",
        {"unreachable": True, "msg": "All items completed", "changed": False,
         "results": [{"item": "a", "unreachable": True, "msg": REASON, "changed": False}]},
        REASON,
    ),
    "second-item-unreachable": (
        "runner_on_unreachable",
        {"unreachable": True, "msg": "All items completed",
         "results": [{"item": "a", "changed": False, "msg": "ok"},
                     {"item": "b", "unreachable": True, "msg": REASON}]},
        REASON,
    ),
    "failed-loop-item": (
        "runner_on_failed",
        {"failed": True, "msg": "One or more items failed",
         "results": [{"item": "a", "failed": True, "msg": "boom", "rc": 1}]},
        "boom",
    ),
    "unreachable-no-loop": ("runner_on_unreachable", {"unreachable": True, "msg": REASON}, REASON),
}


@pytest.mark.parametrize(("kind", "res", "message"), CASES.values(), ids=CASES.keys())
def test_a_hosts_failure_keeps_the_items_reason(kind: str, res: dict[str, Any], message: str,
                                                tmp_path: Path) -> None:
    sink = EventSink("run-1", tmp_path, None)
    sink({"event": "playbook_on_task_start", "event_data": {"task": "install packages"}})
    sink({"event": kind, "event_data": {"host": "n1", "task": "install packages", "res": res}})
    sink.close()
    assert (sink.hosts["n1"].failed_task, sink.hosts["n1"].message) == ("install packages", message)
    line = json.loads((tmp_path / "failures.jsonl").read_text())
    assert line["message"] == message


def test_on_result_gets_each_successful_result_and_never_a_no_log_one(tmp_path: Path) -> None:
    got: list[tuple[str, Any]] = []
    sink = EventSink("run-1", tmp_path, None, lambda host, res: got.append((host, dict(res))))
    sink({"event": "runner_on_ok", "event_data": {"host": "n1", "task": "read", "res": {"ufc_certs": [1]}}})
    sink({"event": "runner_on_failed", "event_data": {"host": "n2", "task": "read", "res": {"msg": "x"}}})
    hidden = {"censored": "the output has been hidden"}
    sink({"event": "runner_on_ok", "event_data": {"host": "n3", "task": "read", "res": hidden}})
    sink({"event": "runner_on_skipped", "event_data": {"host": "n4", "task": "read", "res": {}}})
    sink.close()
    assert got == [("n1", {"ufc_certs": [1]})]
