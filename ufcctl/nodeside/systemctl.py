"""systemctl for the node-side programs (engine level: the one place they run it)."""

from __future__ import annotations

import subprocess

TIMEOUT = 60.0


def systemctl(*args: str) -> str:
    """`systemctl ARGS...`; its stdout, stripped (callers read states; a failed call reads as "")."""
    done = subprocess.run(["systemctl", *args], capture_output=True, text=True, check=False, timeout=TIMEOUT)
    return done.stdout.strip()
