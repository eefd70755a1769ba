"""keepalived's track script decides where the VIP lives: only the local haproxy's answer counts, never the
host's own kube-apiserver, so a planned restart of the holder's apiserver (certs renew, upgrade) does not
move the VIP away and back, resetting every connection through it twice."""

from __future__ import annotations

from pathlib import Path

ROLE = Path(__file__).resolve().parents[3] / "roles" / "apiserver_lb"
SCRIPT = ROLE / "templates" / "ufcctl-check-apiserver.sh.j2"


def _commands(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_track_script_checks_the_local_haproxy_only() -> None:
    commands = "\n".join(_commands(SCRIPT.read_text()))
    assert "https://127.0.0.1:{{ apiserver_lb_nodes_port | int }}/readyz" in commands
    assert "apiserver_lb_backend_port" not in commands  # the host's own apiserver
    assert commands.count("curl ") == 1
