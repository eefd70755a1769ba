"""TEST DOUBLE for kube-apiserver (an HTTPS /readyz answerer) and helpers to run it in lab containers."""

from __future__ import annotations

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).with_name("standin.py")
UNIT = "ufcctl-apiserver-standin"
REMOTE = "/usr/local/bin/ufcctl-apiserver-standin"
FLAG = "/run/ufcctl-apiserver-standin/unready"


def _podman(*args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["podman", *args], capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def start(container: str, port: int = 6443, env: dict[str, str] | None = None) -> None:
    """Copy the test double into `container` and run it as a transient systemd unit (idempotent)."""
    _podman("cp", str(SCRIPT), f"{container}:{REMOTE}", env=env)
    script = (
        f"chmod 0755 {REMOTE}; rm -f {FLAG}; systemctl is-active --quiet {UNIT} || "
        f"systemd-run --unit {UNIT} --collect {REMOTE} --port {port}"
    )
    _podman("exec", container, "sh", "-c", script, env=env)


def set_ready(container: str, ready: bool, env: dict[str, str] | None = None) -> None:
    action = f"rm -f {FLAG}" if ready else f"mkdir -p {Path(FLAG).parent} && touch {FLAG}"
    _podman("exec", container, "sh", "-c", action, env=env)


def stop(container: str, env: dict[str, str] | None = None) -> None:
    _podman("exec", container, "sh", "-c", f"systemctl stop {UNIT} || true", env=env)
