"""LAB EMULATOR of kube-apiserver (a stand-in answering HTTPS /readyz) and helpers to run it in a lab."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
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


# The LAB API STAND-IN of the kube emulator (tests/lab_standins/kube_emulator, started by its `kubeadm
# init`/join on a deployed lab) answers the same where it matters here: /readyz with the same unready
# flag, and the anonymous /version (the VIP client's request) with the X-Standin-Backend header; every
# other path needs credentials there, as on kube-apiserver.
EMULATOR_UNIT = "kube-apiserver"


def start(container: str, port: int = 6443, env: dict[str, str] | None = None) -> None:
    """Copy the stand-in into `container` and run it as a transient systemd unit (idempotent); where the
    kube emulator's apiserver or a real kube-apiserver (kubeadm's static Pod) already serves the port, that
    one answers instead."""
    _podman("cp", str(SCRIPT), f"{container}:{REMOTE}", env=env)
    script = (
        f"chmod 0755 {REMOTE}; rm -f {FLAG}; systemctl is-active --quiet {EMULATOR_UNIT} || "
        f"ss -Hltn 'sport = :{port}' | grep -q . || "
        f"systemctl is-active --quiet {UNIT} || "
        f"systemd-run --unit {UNIT} --collect {REMOTE} --port {port}"
    )
    _podman("exec", container, "sh", "-c", script, env=env)


def set_ready(container: str, ready: bool, env: dict[str, str] | None = None) -> None:
    action = f"rm -f {FLAG}" if ready else f"mkdir -p {Path(FLAG).parent} && touch {FLAG}"
    _podman("exec", container, "sh", "-c", action, env=env)


def stop(container: str, env: dict[str, str] | None = None) -> None:
    _podman("exec", container, "sh", "-c", f"systemctl stop {UNIT} || true", env=env)


CLIENT = Path(__file__).with_name("vip_client.py")
CLIENT_UNIT = "ufcctl-vip-client"
CLIENT_LOG = "/tmp/ufcctl-vip-client.log"


def start_client(container: str, vip: str, port: int = 8443, env: dict[str, str] | None = None) -> None:
    """Run the VIP test client in `container` (outside the LB hosts) as a transient unit."""
    _podman("cp", str(CLIENT), f"{container}:/usr/local/bin/ufcctl-vip-client", env=env)
    script = (
        f"rm -f {CLIENT_LOG}; systemctl stop {CLIENT_UNIT} 2>/dev/null; "
        f"systemd-run --unit {CLIENT_UNIT} --collect python3 /usr/local/bin/ufcctl-vip-client "
        f"--vip {vip} --port {port} --log {CLIENT_LOG}"
    )
    _podman("exec", container, "sh", "-c", script, env=env)


def stop_client(container: str, env: dict[str, str] | None = None) -> None:
    _podman("exec", container, "sh", "-c", f"systemctl stop {CLIENT_UNIT} || true", env=env)


def client_log(container: str, env: dict[str, str] | None = None) -> list[tuple[float, bool, str]]:
    """(time, ok, backend-or-error) for every request the client made so far."""
    entries = []
    # empty until the client's first request (systemd-run returns before python has started)
    for line in _podman(
        "exec", container, "sh", "-c", f"cat {CLIENT_LOG} 2>/dev/null || true", env=env
    ).splitlines():
        parts = line.split()
        if len(parts) == 3:
            entries.append((float(parts[0]), parts[1] == "ok", parts[2]))
    return entries


@dataclass
class ClientWindow:
    """When the VIP client ran around a step, and its requests in that time (filled on exit)."""

    started: float
    ended: float = 0.0
    requests: list[tuple[float, bool, str]] = field(default_factory=list)

    @property
    def failed(self) -> list[tuple[float, bool, str]]:
        return [e for e in self.requests if not e[1]]


@contextmanager
def client_running(container: str, vip: str, env: dict[str, str] | None = None) -> Iterator[ClientWindow]:
    """The VIP client running in `container` around the `with` body (a second's tail after it); the
    window's requests are those made while the body ran."""
    start_client(container, vip, env=env)
    window = ClientWindow(time.time())
    try:
        yield window
    finally:
        window.ended = time.time()
        time.sleep(1)
        stop_client(container, env=env)
        window.requests = [e for e in client_log(container, env=env)
                           if window.started <= e[0] <= window.ended]
