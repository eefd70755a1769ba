"""Every registered rollout kind keeps the contract of ufcctl/rollout/kind.py: its playbook's play starts
with the rollout gate and runs host_pinned (overridable for Mitogen), and the last task of its last
role is the marker task the engine counts a node done by. A kind that broke either would never admit a
node, or would mark none done."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ufcctl.paths import ROLES_DIR, playbook
from ufcctl.rollout import catalog
from ufcctl.rollout.kind import RolloutKind

KINDS = list(catalog.KINDS)


def _play(kind: RolloutKind) -> dict:
    plays = yaml.safe_load(playbook(kind.playbook).read_text())
    assert isinstance(plays, list) and len(plays) == 1, f"{kind.playbook}: one play per rollout playbook"
    return plays[0]


def _role_name(entry: str | dict) -> str:
    return entry if isinstance(entry, str) else entry["role"]


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_the_play_starts_at_the_gate_and_runs_host_pinned(kind: RolloutKind) -> None:
    play = _play(kind)
    assert play["strategy"] == "{{ ufc_rollout_strategy | default('host_pinned') }}"
    assert play["gather_facts"] is False
    first = play["pre_tasks"][0]
    assert first["ansible.builtin.import_tasks"] == "tasks/rollout-gate.yml"
    # "all": the kind narrows its targets itself (remove-control-plane: control planes and etcd members)
    assert kind.group == "all" or kind.group in play["hosts"], \
        f"{kind.playbook} targets {play['hosts']}, the kind {kind.group}"


def _last_tasks_file(play: dict) -> Path:
    """The tasks file whose last task ends the node's work: the last role's main.yml, or, for a play
    whose tasks are one import_role (remove-nodes: roles/kube_node tasks/remove.yml), its tasks_from."""
    if "roles" in play:
        assert "tasks" not in play  # nothing may run after the marker
        return Path(ROLES_DIR) / _role_name(play["roles"][-1]) / "tasks" / "main.yml"
    assert len(play["tasks"]) == 1, "one import_role, so nothing runs after its marker"
    imported = play["tasks"][0]["ansible.builtin.import_role"]
    return Path(ROLES_DIR) / imported["name"] / "tasks" / imported.get("tasks_from", "main.yml")


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_the_last_role_ends_with_the_marker_task(kind: RolloutKind) -> None:
    play = _play(kind)
    assert "post_tasks" not in play  # nothing may run after the marker
    path = _last_tasks_file(play)
    tasks = yaml.safe_load(path.read_text())
    assert tasks[-1]["name"] == kind.marker_task, str(path)
    assert "when" not in tasks[-1]  # it must run on every node that got that far
