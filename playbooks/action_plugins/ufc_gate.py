"""Action `ufc_gate`: wait until the ufcctl rollout engine admits this host, then say go, skip or stop.

The first task of every rollout play (playbooks/tasks/rollout-gate.yml). Ansible loads this plugin for the
playbooks in this directory (an adjacent `action_plugins/`). It runs on the controller, in the
host's worker process, and blocks there: with `strategy: host_pinned` and forks a few above the
window, the hosts waiting here are the next ones to start, so a freed slot is refilled at once.

Protocol (ufcctl/engine/gate.py serves the other end): connect to the unix socket named by
UFC_ROLLOUT_GATE, send {"host": inventory_hostname} as one JSON line, read one JSON line
{"answer": "go"|"skip"|"stop", "reason": ..., "facts": {...}}; the result carries `facts` (what the
engine knows of the host, e.g. labels_at_target: it was not drained; {} without an engine). Without UFC_ROLLOUT_GATE (a plain ansible-playbook
run) the answer is go at once. A connection the engine closes without answering (it died) fails
the host, so an orphaned Ansible process starts no new node.

Standard library only: it runs inside Ansible, which need not be able to import ufcctl.
"""

from __future__ import annotations

import json
import os
import socket

from ansible.plugins.action import ActionBase

GATE_ENV = "UFC_ROLLOUT_GATE"
ANSWERS = ("go", "skip", "stop")
MAX_ANSWER = 65536


def ask(path: str, host: str) -> dict:
    """The engine's answer for `host`: {"answer": ..., "reason": ...}; raises OSError/ValueError."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        sock.sendall(json.dumps({"host": host}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                raise ConnectionError("the rollout engine closed the gate without an answer")
            data += chunk
            if len(data) > MAX_ANSWER:
                raise ValueError("the gate's answer is too long")
    answer = json.loads(data)
    if not isinstance(answer, dict) or answer.get("answer") not in ANSWERS:
        raise ValueError(f"not a gate answer: {data[:200]!r}")
    return answer


class ActionModule(ActionBase):
    _supports_check_mode = True
    _requires_connection = False  # nothing runs on the host: the gate only talks to the engine

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        host = (task_vars or {}).get("inventory_hostname") or self._play_context.remote_addr
        path = os.environ.get(GATE_ENV)
        result["changed"] = False
        if not path:
            result.update(answer="go", reason=None, facts={},
                          msg="no rollout engine (plain ansible-playbook): go")
            return result
        try:
            answer = ask(path, host)
        except (OSError, ValueError) as err:
            result.update(failed=True, answer=None, msg=f"rollout gate {path}: {err}")
            return result
        reason = answer.get("reason")
        facts = answer.get("facts")
        result.update(answer=answer["answer"], reason=reason, facts=facts if isinstance(facts, dict) else {},
                      msg=answer["answer"] + (f": {reason}" if reason else ""))
        return result
