"""roles/apiserver_lb tasks/backend.yml: taking a control plane out of the VIP lets requests already sent
to it be answered, and never waits on long-lived connections."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]


def _tasks() -> list[dict]:
    return yaml.safe_load((ROOT / "roles/apiserver_lb/tasks/backend.yml").read_text())


def test_a_server_taken_out_gets_a_bounded_grace_before_its_apiserver_stops() -> None:
    """Without the grace, a request forwarded just before MAINT was cut when the apiserver stopped
    (RemoteDisconnected through the VIP during `certs renew --only kubeadm`, CI at a6a7b2e)."""
    tasks = _tasks()
    (set_state,) = [i for i, t in enumerate(tasks) if "community.general.haproxy" in t]
    grace = tasks[set_state + 1]
    assert grace["ansible.builtin.wait_for"] == {"timeout": "{{ apiserver_lb_backend_grace_seconds }}"}
    assert "apiserver_lb_backend_state == 'disabled'" in grace["when"]
    assert "__apiserver_lb_backend_set is changed" in grace["when"]  # a second removal waits for nothing
    defaults = yaml.safe_load((ROOT / "roles/apiserver_lb/defaults/main.yml").read_text())
    assert 0 < defaults["apiserver_lb_backend_grace_seconds"] <= 10


def test_taking_a_server_out_never_waits_for_its_sessions_to_end() -> None:
    """The module's drain waits for haproxy's session count to reach 0, which long-lived watches and
    kubelets never let happen: the lab's upgrade-cluster and control-plane removal failed on it."""
    (module,) = [t["community.general.haproxy"] for t in _tasks() if "community.general.haproxy" in t]
    assert not module.get("drain")
