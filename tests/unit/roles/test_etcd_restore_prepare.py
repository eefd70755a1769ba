"""The restore's prepare step reads the copied snapshot with the restore tool (`etcdutl snapshot status`)
and refuses one it cannot read, before the play that stops every kube-apiserver (issue 42: a file with a
valid trailer that is no database stopped every apiserver before `etcdutl` failed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
TASKS = yaml.safe_load((ROOT / "roles" / "etcd" / "tasks" / "restore.yml").read_text())
PLAYS = yaml.safe_load((ROOT / "playbooks" / "etcd-restore.yml").read_text())


def _step(step: str) -> list[dict[str, Any]]:
    """The tasks of the block that runs for etcd_restore_step == `step`."""
    (block,) = [t for t in TASKS if "block" in t and t.get("when") == f"etcd_restore_step == '{step}'"]
    return block["block"]


def _status_task(tasks: list[dict[str, Any]]) -> int | None:
    for i, task in enumerate(tasks):
        argv = task.get("ansible.builtin.command", {}).get("argv", [])
        if argv[1:3] == ["snapshot", "status"]:
            return i
    return None


def test_prepare_reads_the_copy_with_the_restore_tool_after_copying_it() -> None:
    tasks = _step("prepare")
    at = _status_task(tasks)
    assert at is not None, "no `snapshot status` in the prepare step"
    argv = tasks[at]["ansible.builtin.command"]["argv"]
    assert argv[0] == "{{ __etcd_restore_tool }}" and "{{ __etcd_restore_copy }}" in argv
    copied = next(i for i, t in enumerate(tasks) if "ansible.builtin.copy" in t)
    assert copied < at
    refusal = tasks[at + 1]["ansible.builtin.assert"]
    assert all(tasks[at]["register"] in cond for cond in refusal["that"])
    assert _status_task(_step("restore")) is None  # the restore step only stops and restores


def test_the_prepare_play_runs_before_any_apiserver_stops() -> None:
    steps = [(play["name"], task.get("vars", {}).get("etcd_restore_step"),
              task.get("vars", {}).get("kube_control_plane_apiserver_state"))
             for play in PLAYS for task in play["tasks"]]
    prepare = next(i for i, (_, step, _) in enumerate(steps) if step == "prepare")
    stop = next(i for i, (_, _, state) in enumerate(steps) if state == "stopped")
    assert prepare < stop
    assert all(play.get("any_errors_fatal") for play in PLAYS)  # one member's failure stops every host


def _passes(result: dict[str, Any]) -> bool:
    """The refusal's conditions as Ansible evaluates them: in order, the first false one fails the host."""
    tasks = _step("prepare")
    at = _status_task(tasks)
    assert at is not None
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["from_json"] = json.loads
    for cond in tasks[at + 1]["ansible.builtin.assert"]["that"]:
        if not env.compile_expression(cond)(**{tasks[at]["register"]: result}):
            return False
    return True


STATUS = [
    # id, what the tool returned, refused
    ("a-database", {"rc": 0, "stdout": '{"hash":1,"revision":42,"totalKey":7,"totalSize":20480}'}, False),
    ("not-a-database", {"rc": 1, "stdout": "", "stderr": "Error: invalid database"}, True),
    ("tool-panics", {"rc": 2, "stdout": "", "stderr": "panic: page 7 already freed"}, True),
    ("no-json", {"rc": 0, "stdout": "Error: snapshot file not found", "stderr": ""}, True),
    ("json-without-revision", {"rc": 0, "stdout": '{"hash":1}', "stderr": ""}, True),
]


@pytest.mark.parametrize(("result", "refused"), [c[1:] for c in STATUS], ids=[c[0] for c in STATUS])
def test_a_snapshot_the_tool_cannot_read_is_refused(result: dict[str, Any], refused: bool) -> None:
    assert _passes(result) is not refused
