"""A stdout that goes away (`| head -1`) or fills the disk (/dev/full) ends the CLI cleanly.

Run as a real process: CliRunner's stdout never breaks. A closed pipe is quiet (exit 0, nothing on
stderr, like other CLIs); a full disk is one `Error:` line and exit 1; never a traceback and never
"internal error".
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SNAPSHOT = ROOT / "tests" / "fixtures" / "placement" / "snapshot.json"
INVENTORY = ROOT / "inventories" / "sample"

COMMANDS = {
    "help": ["--help"],
    "version": ["--version"],
    "group-help": ["placement", "--help"],
    "inventory-show": ["inventory", "show", "--inventory", str(INVENTORY)],
    "inventory-show-json": ["inventory", "show", "--inventory", str(INVENTORY), "--output", "json"],
    "inventory-check": ["inventory", "check", "--inventory", str(INVENTORY)],
    "runs": ["runs"],
    "placement-validate": ["placement", "validate", str(SNAPSHOT)],
}


def run(args: list[str], stdout: int, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore")
    return subprocess.run(
        [sys.executable, "-c", "from ufcctl.cli.main import main; main()", *args],
        stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env, timeout=120,
    )


@pytest.mark.parametrize("args", COMMANDS.values(), ids=COMMANDS.keys())
def test_closed_pipe_is_quiet(args: list[str], tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write is EPIPE
    try:
        proc = run(args, write_end, tmp_path)
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (0, "")


@pytest.mark.parametrize("args", COMMANDS.values(), ids=COMMANDS.keys())
def test_full_disk_is_one_error_line(args: list[str], tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        proc = run(args, full.fileno(), tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["Error: cannot write the output: No space left on device"]
