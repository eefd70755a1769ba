"""roles/apiserver_lb tasks/backend.yml: taking a control plane out of the VIP never cuts a request."""

from __future__ import annotations

from pathlib import Path

import yaml
from jinja2 import Environment

ROOT = Path(__file__).resolve().parents[3]


def _haproxy_args() -> dict:
    tasks = yaml.safe_load((ROOT / "roles/apiserver_lb/tasks/backend.yml").read_text())
    (task,) = [t for t in tasks if "community.general.haproxy" in t]
    return task["community.general.haproxy"]


def test_a_disabled_server_is_drained_before_maint_and_an_enabled_one_is_not() -> None:
    """community.general.haproxy with drain: DRAIN, wait for scur 0, then MAINT. Without it the server
    went to MAINT at once while a session was still open, and the apiserver stopped under it (a VIP
    request lost with RemoteDisconnected during `certs renew --only kubeadm`)."""
    args = _haproxy_args()
    drain = Environment().from_string(args["drain"])
    assert drain.render(apiserver_lb_backend_state="disabled") == "True"
    assert drain.render(apiserver_lb_backend_state="enabled") == "False"
    assert args["wait"] is True  # drain's wait for scur 0 happens only when waiting
