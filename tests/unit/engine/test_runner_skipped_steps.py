"""engine/run_events.py's skipped_step(): what counts as a step a role reported SKIPPED."""

from __future__ import annotations

import pytest

from ufcctl.engine.run_events import skipped_step


@pytest.mark.parametrize(
    ("res", "expected"),
    [
        ({"msg": "cni: 12 objects valid; apply SKIPPED on cp1 (kubectl not found in PATH)"},
         "cni: 12 objects valid; apply SKIPPED on cp1 (kubectl not found in PATH)"),
        ({"msg": "first line\nkubeadm join SKIPPED on w1: no valid join token\nmore"},
         "kubeadm join SKIPPED on w1: no valid join token"),
        ({"msg": "skipping: the task was skipped"}, None),  # Ansible's own word, not a role's report
        ({"msg": "NOT-SKIPPEDX"}, None),
        ({"msg": ["SKIPPED"]}, None),  # not a message string
        ({"changed": True}, None),
        ({"msg": "output hidden: the task has no_log: true"}, None),
    ],
)
def test_skipped_step(res: dict, expected: str | None) -> None:
    assert skipped_step(res) == expected
