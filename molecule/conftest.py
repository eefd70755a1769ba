"""Shared helpers for the scenarios' testinfra tests: rerun a scenario playbook with other inputs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class PlaybookRun:
    """Exit code and combined output of one ansible-playbook run against the scenario's instances."""

    rc: int
    output: str

    @property
    def text(self) -> str:
        """The output with whitespace runs collapsed, so messages wrapped by the YAML callback match."""
        return " ".join(ANSI_ESCAPE.sub("", self.output).split())


def instances_from_inventory() -> list[str]:
    """Host names of the scenario's instances, from the inventory molecule generated."""
    inventory = yaml.safe_load(Path(_molecule_env("MOLECULE_INVENTORY_FILE")).read_text())
    return sorted(inventory["all"]["hosts"])


def _molecule_env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run these tests through `molecule verify`, not plain pytest")
    return value


@pytest.fixture(scope="session")
def instance_names() -> list[str]:
    return instances_from_inventory()


@pytest.fixture
def run_playbook(tmp_path: Path, instance_names: list[str]) -> Callable[..., PlaybookRun]:
    """Run a playbook of this scenario with extra vars, extra group memberships, --check, --diff or --limit."""

    def run(
        playbook: str = "converge.yml",
        extra_vars: dict | None = None,
        groups: list[str] | None = None,
        check: bool = False,
        limit: str | None = None,
        diff: bool = False,
    ) -> PlaybookRun:
        inventory = Path(_molecule_env("MOLECULE_INVENTORY_FILE")).parent
        cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory)]
        if groups:
            extra_inventory = tmp_path / "groups.yml"
            members = {"hosts": {name: {} for name in instance_names}}
            extra_inventory.write_text(yaml.safe_dump({group: members for group in groups}))
            cmd += ["-i", str(extra_inventory)]
        if extra_vars:
            vars_file = tmp_path / "vars.json"
            vars_file.write_text(json.dumps(extra_vars))
            cmd += ["-e", f"@{vars_file}"]
        if check:
            cmd.append("--check")
        if diff:
            cmd.append("--diff")
        if limit:
            cmd += ["--limit", limit]
        cmd.append(str(Path(_molecule_env("MOLECULE_SCENARIO_DIRECTORY")) / playbook))
        env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, env=env)
        return PlaybookRun(proc.returncode, proc.stdout + proc.stderr)

    return run


def _logged_runs(first_play: str) -> list[PlaybookRun]:
    log = Path(_molecule_env("MOLECULE_EPHEMERAL_DIRECTORY")) / "ansible.log"
    if not log.is_file():
        pytest.fail(f"{log} missing: set ANSIBLE_LOG_PATH to it in the scenario's provisioner env")
    header = f"PLAY [{first_play}]"
    return [PlaybookRun(0, header + chunk) for chunk in log.read_text(errors="replace").split(header)[1:]]


@pytest.fixture(scope="session")
def logged_runs() -> Callable[[str], list[PlaybookRun]]:
    """The runs of the scenario's playbook molecule made (check, converge, idempotence), oldest first.

    Read from the Ansible log the scenario writes (ANSIBLE_LOG_PATH in its molecule.yml), so the
    verify step checks what those runs printed without running the playbook again. A run is the
    text from the header of its first play (the argument) to the next run's; `rc` is 0 (molecule
    stops the sequence at a failed run). The log may hold earlier `molecule test`s: take the last ones.
    """
    return _logged_runs
