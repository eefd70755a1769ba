"""The lab's controller SSH key (ssh-keygen) and a probe that an sshd answers on a lab address."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from ufcctl.engine import statedir
from ufcctl.errors import RunFailed
from ufcctl.lab.podman import require_tools


def ensure_keypair(private_key: Path, comment: str = "ufcctl-lab") -> str:
    """Create an ed25519 key pair once (mode 0600) and return the public key line."""
    public = private_key.with_name(private_key.name + ".pub")
    if not private_key.exists():
        require_tools(["ssh-keygen"])
        statedir.ensure_private_dir(private_key.parent)
        # made in a per-process directory beside the key (no predictable name a link could sit at),
        # then renamed into place, the private key last
        with tempfile.TemporaryDirectory(prefix=".ufcctl-key-", dir=private_key.parent) as workdir:
            partial = Path(workdir) / private_key.name
            proc = subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(partial)],
                capture_output=True, text=True, check=False,
            )
            if proc.returncode != 0:
                raise RunFailed(f"ssh-keygen failed for {private_key}: {proc.stderr.strip()}")
            partial.with_name(partial.name + ".pub").replace(public)
            partial.replace(private_key)
    # ssh refuses a private key others can read; fix it even if someone loosened it.
    os.chmod(private_key, 0o600)
    if not public.exists():
        raise RunFailed(f"{public} is missing", f"delete {private_key} and rerun so both are regenerated")
    return public.read_text().strip()


def wait_for_sshd(host: str, timeout: float, port: int = 22) -> None:
    """Wait until `host:port` sends an SSH banner (sshd accepts connections)."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=2) as conn:
                conn.settimeout(2)
                banner = conn.recv(64)
                if banner.startswith(b"SSH-"):
                    return
                last = f"unexpected banner {banner[:20]!r}"
        except OSError as err:
            last = str(err)
        time.sleep(0.3)
    raise RunFailed(f"sshd on {host}:{port} did not answer within {timeout:.0f}s ({last})")
