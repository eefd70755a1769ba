"""The rollout gate against a real ansible-playbook: the shipped gate action and task file, on six
inventory hosts that all use the local connection (loopback only, no containers).

- go / skip / stop: the engine admits up to its capacity, a drain guard skips one node, a failure
  with --max-fail 0 stops the run and every host still waiting is told to stop;
- a freed slot is refilled inside the same ansible-playbook process (one process for the chunk);
- a plain ansible-playbook run, with no engine, passes every host through the gate.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.engine import gate as gate_module
from ufcctl.engine.runner import run_playbook
from ufcctl.rollout import runs
from ufcctl.rollout.kind import RolloutKind, RolloutRequest

ROOT = Path(__file__).resolve().parents[3]
HOSTS = [f"h{i}" for i in range(1, 7)]
MARKER = "Report the node done"

PLAY = """
- name: Gate test
  hosts: npu_node
  gather_facts: false
  strategy: "{{ ufc_rollout_strategy | default('host_pinned') }}"
  pre_tasks:
    - name: Reach the gate only once another node passed it (an order the test needs, not a race)
      ansible.builtin.wait_for:
        path: "{{ out_dir }}/{{ after }}"
        timeout: 300
      when: after is defined
    - name: Wait for the rollout engine to admit the node
      ansible.builtin.import_tasks: tasks/rollout-gate.yml
  tasks:
    - name: Record that the node passed the gate
      ansible.builtin.copy:
        dest: "{{ out_dir }}/{{ inventory_hostname }}"
        content: "passed\\n"
        mode: "0600"
    - name: Wait until the test releases the node
      ansible.builtin.wait_for:
        path: "{{ out_dir }}/release-{{ inventory_hostname }}"
        timeout: 300
      when: hold | default(false)
    - name: Fail where the test asks
      ansible.builtin.fail:
        msg: injected failure
      when: fail_here | default(false)
    - name: Report the node done
      ansible.builtin.debug:
        msg: done
"""


@pytest.fixture()
def playbooks(tmp_path: Path) -> Path:
    """A playbook directory with the shipped gate (action plugin and task file) beside a test play."""
    folder = tmp_path / "playbooks"
    (folder / "action_plugins").mkdir(parents=True)
    (folder / "tasks").mkdir()
    shutil.copy(ROOT / "playbooks" / "action_plugins" / "ufc_gate.py", folder / "action_plugins")
    shutil.copy(ROOT / "playbooks" / "tasks" / "rollout-gate.yml", folder / "tasks")
    (folder / "play.yml").write_text(PLAY)
    return folder


def inventory(out: Path, **per_host: dict[str, Any]) -> Inventory:
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "out_dir": str(out)}
    hosts = {h: Host(h, {**local, **per_host.get(h, {})}, frozenset({"all", "npu_node"})) for h in HOSTS}
    return Inventory("gate", hosts, {"npu_node": Group("npu_node", hosts=tuple(HOSTS))})


class Watch:
    """A RolloutObserver counting nodes in flight; releases `hold` nodes once `trigger` has ended."""

    def __init__(self, out: Path, trigger: str | None = None, hold: tuple[str, ...] = ()):
        self.out, self.trigger, self.hold = out, trigger, hold
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.finished: dict[str, str] = {}

    def rollout_started(self, run_id: str, plan: Any, todo: Any) -> None:
        pass

    def node_started(self, host: str, batch: int) -> None:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def node_finished(self, host: str, batch: int, state: str, reason: str | None,
                      seconds: float | None) -> None:
        with self.lock:
            if host not in self.finished and state != "skipped":
                self.in_flight -= 1
            self.finished[host] = state
        if host == self.trigger:
            for held in self.hold:
                (self.out / f"release-{held}").write_text("go\n")

    def stopped(self, reason: str) -> None:
        pass


class SkipH3:
    """A drain guard (test double) that skips h3, as if NPU pods ran on it."""

    def at_target(self, hosts: Sequence[Host]) -> set[str]:
        return set()

    def prepare(self, host: Host) -> str | None:
        return "NPU pods running (train/job-0)" if host.name == "h3" else None

    def release(self, host: Host, ok: bool) -> None:
        pass


@pytest.fixture()
def answers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every answer the engine's gate sent, as (host, answer): a spy on the real method."""
    sent: list[tuple[str, str]] = []
    original = gate_module.GateRequest.answer

    def spy(self: gate_module.GateRequest, answer: str, reason: str | None = None) -> bool:
        sent.append((self.host, answer))
        return original(self, answer, reason)

    monkeypatch.setattr(gate_module.GateRequest, "answer", spy)
    return sent


def rollout(tmp_path: Path, playbooks: Path, inv: Inventory, watch: Watch, **kw: Any):
    processes: list[list[str]] = []

    def counting_run(*args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        processes.append([h.name for h in args[1]])
        return run_playbook(*args, **kwargs)

    guard = kw.pop("guard", None)
    kind = RolloutKind("gate-test", str(playbooks / "play.yml"), MARKER, "npu_node",
                       hooks=lambda _r: (guard, "test guard"))
    request = RolloutRequest(inventory_dir=tmp_path / "inv", batch=2, order="plan", **kw)
    from ufcctl.rollout.store import StateStore

    with StateStore(tmp_path / "state" / "state.db") as store:
        summary = runs.start(kind, request, store, inv, run_fn=counting_run, observer=watch)
    return summary, processes


@pytest.fixture()
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    out = tmp_path / "out"
    out.mkdir()
    return out


def test_go_skip_and_stop_after_a_failure(tmp_path: Path, playbooks: Path, state: Path,
                                          answers: list[tuple[str, str]]) -> None:
    # h4-h6 reach the gate only after h2 passed it: with 4 forks, one could otherwise arrive first on a
    # loaded machine and take h2's slot (seen in CI: h4 done)
    later = {"after": "h2"}
    inv = inventory(state, h1={"hold": True}, h2={"fail_here": True}, h4=later, h5=later, h6=later)
    watch = Watch(state, trigger="h2", hold=("h1",))  # h1 ends only after h2 failed
    summary, processes = rollout(tmp_path, playbooks, inv, watch, max_fail=0, guard=SkipH3())
    states = {n.host: (n.state, n.reason) for n in summary.nodes}
    assert states["h1"][0] == "done"
    assert states["h2"][0] == "failed" and "injected failure" in states["h2"][1]
    assert states["h3"] == ("skipped", "NPU pods running (train/job-0)")
    assert {h: s for h, (s, _) in states.items() if h in ("h4", "h5", "h6")} == dict.fromkeys(
        ("h4", "h5", "h6"), "pending")
    assert summary.status == "stopped" and "exceeds --max-fail 0%" in (summary.message or "")
    sent = dict(answers)
    assert sent["h1"] == "go" and sent["h2"] == "go" and sent["h3"] == "skip"
    assert all(answer == "stop" for host, answer in answers if host in ("h4", "h5", "h6"))
    assert {p.name for p in state.iterdir() if p.name.startswith("h")} == {"h1", "h2"}  # only go passed
    assert watch.max_in_flight <= 2
    assert len(processes) == 1


def test_freed_slots_are_refilled_inside_one_process(tmp_path: Path, playbooks: Path, state: Path,
                                                     answers: list[tuple[str, str]]) -> None:
    watch = Watch(state)
    summary, processes = rollout(tmp_path, playbooks, inventory(state), watch)
    assert summary.status == "done" and summary.counts["done"] == 6
    assert processes == [HOSTS]  # one ansible-playbook for the chunk, hosts in start order
    assert sorted(answers) == [(h, "go") for h in HOSTS]
    assert watch.max_in_flight <= 2


def test_plain_ansible_playbook_passes_every_host(tmp_path: Path, playbooks: Path, state: Path) -> None:
    lines = [f"{h} ansible_connection=local ansible_python_interpreter={sys.executable} out_dir={state}"
             for h in HOSTS]
    (tmp_path / "hosts.ini").write_text("[npu_node]\n" + "\n".join(lines) + "\n")
    env = {k: v for k, v in os.environ.items() if k != gate_module.GATE_ENV}
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.ini"),
         str(playbooks / "play.yml")],
        env={**env, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}, cwd=ROOT, capture_output=True, text=True,
        timeout=600, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert sorted(p.name for p in state.iterdir()) == HOSTS
