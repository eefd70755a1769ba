"""What a real ansible-runner run leaves under .ufc/: no no_log output anywhere, private modes only;
and a run whose selection matched no task says so. Local connection on localhost: no network."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ufcctl.domain.inventory.model import Host
from ufcctl.engine.run_events import NO_LOG_MESSAGE
from ufcctl.engine.runner import RunOptions, run_playbook

SECRET = "FAKE-SECRET-7f3a9c"

PLAYBOOK = f"""
- hosts: all
  gather_facts: false
  roles:
    - role: checked
  tasks:
    - name: prints a secret and fails, but no_log
      ansible.builtin.shell: "echo {SECRET}-out; echo {SECRET}-err >&2; echo {SECRET} > {{{{ out }}}}; exit 3"
      no_log: true
      changed_when: true
      tags: [secret]
    - name: loops over secrets, no_log
      ansible.builtin.command: "echo {SECRET}-{{{{ item }}}}"
      loop: [a, b]
      no_log: true
      changed_when: false
      ignore_errors: true
      tags: [loop]
"""

# A role with an argument spec: Ansible adds a validation task to it that runs whatever the tags.
ROLE_SPEC = """
argument_specs:
  main:
    short_description: a role with a spec
    options:
      checked_value: {type: str, default: x}
"""


def _host(workdir: Path) -> Host:
    return Host(name="localhost", groups=frozenset({"all"}), vars={
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "out": str(workdir / "out.txt")})


@pytest.fixture()
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "ufc"))
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    role = tmp_path / "roles" / "checked"
    (role / "meta").mkdir(parents=True)
    (role / "tasks").mkdir()
    (role / "meta" / "argument_specs.yml").write_text(ROLE_SPEC)
    (role / "tasks" / "main.yml").write_text(
        "- name: role work\n  ansible.builtin.command: 'true'\n  changed_when: false\n  tags: [role]\n")
    return tmp_path


def test_no_log_output_is_nowhere_under_the_state_directory(workdir: Path) -> None:
    old = os.umask(0o022)  # a usual umask: without ufcctl's care its files would be world-readable
    try:
        result = run_playbook(workdir / "play.yml", [_host(workdir)], RunOptions(verbosity=3))
    finally:
        os.umask(old)
    assert (workdir / "out.txt").read_text().strip() == SECRET  # the task did run and print it
    assert result.hosts["localhost"].failed_task == "prints a secret and fails, but no_log"
    assert result.hosts["localhost"].message == NO_LOG_MESSAGE
    failures = [json.loads(line) for line in (result.run_dir / "failures.jsonl").read_text().splitlines()]
    assert [f["message"] for f in failures] == [NO_LOG_MESSAGE]
    files = [p for p in (workdir / "ufc").rglob("*") if p.is_file()]
    assert {"summary.json", "failures.jsonl", "hosts.json"} <= {p.name for p in files}
    leaked = [str(p) for p in files if SECRET.encode() in p.read_bytes()]
    assert leaked == []

    # every directory 0700 and every file 0600, the state directory itself included
    loose = [f"{p} {oct(stat.S_IMODE(p.stat().st_mode))}"
             for p in [workdir / "ufc", *(workdir / "ufc").rglob("*")]
             if stat.S_IMODE(p.stat().st_mode) != (0o700 if p.is_dir() else 0o600)]
    assert loose == []
    assert os.umask(0o022) == 0o022  # ... and the process umask is back to what it was


def test_a_run_where_no_task_ran_says_so(workdir: Path) -> None:
    """Tags matching nothing: only Ansible's own argument check of the role runs; that is no work."""
    hosts = [_host(workdir)]
    result = run_playbook(workdir / "play.yml", hosts, RunOptions(tags=("no-such-tag",)))
    assert result.succeeded and result.nothing_ran
    assert json.loads((result.run_dir / "summary.json").read_text())["nothing_ran"] is True
    some = run_playbook(workdir / "play.yml", hosts, RunOptions(tags=("role",)))
    assert some.succeeded and not some.nothing_ran and some.hosts["localhost"].ran == 1
