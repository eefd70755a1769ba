"""The static tag scan finds every tag Ansible's --list-tags finds, in deploy.yml and in every construct."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from ufcctl.engine.playbook_tags import playbook_tags, unknown_tags
from ufcctl.engine.runner import ansible_binary

ROOT = Path(__file__).resolve().parents[3]


def _list_tags(playbook: Path, roles: Path, *extra: str) -> set[str]:
    """Ansible's own answer: the union of every play's TAGS and TASK TAGS."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_ROLES_PATH": str(roles)}
    proc = subprocess.run([ansible_binary(), "-i", "localhost,", str(playbook), "--list-tags", *extra],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tags: set[str] = set()
    for listed in re.findall(r"TAGS: \[([^\]]*)\]", proc.stdout):
        tags |= {t.strip() for t in listed.split(",") if t.strip()}
    return tags


def test_deploy_playbook_tags_match_ansible_list_tags() -> None:
    static = playbook_tags(ROOT / "playbooks" / "deploy.yml", ROOT / "roles")
    assert "nfs" in static and "addons" in static
    # Ansible adds `always` to the argument checks it inserts in roles; the scan leaves special tags out
    assert static | {"always"} == _list_tags(ROOT / "playbooks" / "deploy.yml", ROOT / "roles") | {"always"}


ROLE_A_TASKS = """
- name: a imports a file
  ansible.builtin.import_tasks: more.yml
  tags: a_import
- name: a block
  tags: [a_block]
  block:
    - name: in block
      ansible.builtin.debug: {msg: x}
      tags: a_in_block
  rescue:
    - name: in rescue
      ansible.builtin.debug: {msg: x}
      tags: [a_rescue]
- name: a imports role b from another file
  ansible.builtin.import_role:
    name: b
    tasks_from: other
  tags: a_import_role
- name: templated tag is skipped
  ansible.builtin.debug: {msg: x}
  tags: "{{ some_var }}"
"""

PLAYBOOK = """
- name: play one
  hosts: all
  gather_facts: false
  tags: play_tag
  roles:
    - a
    - role: c
      tags: [c_entry, shared]
  pre_tasks:
    - name: pre
      ansible.builtin.debug: {msg: x}
      tags: "pre1, pre2"
  tasks:
    - name: dynamic include with apply
      ansible.builtin.include_tasks:
        file: tasks/extra.yml
        apply:
          tags: [applied]
      tags: [include_tag]
    - name: a short-form include
      include_role:
        name: b
      tags: short_include
- ansible.builtin.import_playbook: second.yml
"""


def _task(tags: str) -> str:
    return f"- {{name: t, ansible.builtin.debug: {{msg: x}}, tags: {tags}}}\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    _write(tmp_path / "play.yml", PLAYBOOK)
    _write(tmp_path / "second.yml", "- hosts: all\n  gather_facts: false\n  tasks:\n"
                                    "    - {name: s, ansible.builtin.debug: {msg: x}, tags: [second_play]}\n")
    _write(tmp_path / "tasks" / "extra.yml", _task("in_extra"))
    roles = tmp_path / "roles"
    _write(roles / "a" / "tasks" / "main.yml", ROLE_A_TASKS)
    _write(roles / "a" / "tasks" / "more.yml", _task("a_more"))
    _write(roles / "a" / "meta" / "main.yml", "dependencies:\n  - role: d\n    tags: [d_dep]\n")
    _write(roles / "b" / "tasks" / "main.yml", _task("b_main"))
    _write(roles / "b" / "tasks" / "other.yml", _task("b_other"))
    _write(roles / "c" / "tasks" / "main.yml", _task("[shared]"))
    _write(roles / "d" / "tasks" / "main.yml", "- {name: d, ansible.builtin.debug: {msg: !unsafe '{{x}}'}, "
                                               "tags: d_main}\n")
    return tmp_path


def test_every_construct_is_scanned_and_agrees_with_ansible(project: Path) -> None:
    static = playbook_tags(project / "play.yml", project / "roles")
    assert static == {
        "play_tag", "c_entry", "shared", "pre1", "pre2", "include_tag", "applied", "in_extra",
        "short_include", "b_main", "a_import", "a_more", "a_block", "a_in_block", "a_rescue", "a_import_role",
        "b_other", "d_dep", "d_main", "second_play",
    }
    # --list-tags shows what it loads statically and leaves out what only applies when tasks run:
    # tasks of dynamic includes (in_extra, b_main), an include's `apply` tags and rescue tasks. They
    # select tasks all the same, so the scan reads them too. A templated tag only Ansible resolves.
    ansible = _list_tags(project / "play.yml", project / "roles", "-e", "some_var=templated") - {"always"}
    assert ansible - static == {"templated"}
    assert static - ansible == {"in_extra", "b_main", "applied", "a_rescue"}


def test_unknown_tags_keep_their_order_and_accept_ansible_special_tags() -> None:
    known = frozenset({"nfs", "addons"})
    assert unknown_tags(["nfz", "nfs", "always", "never", "all", "tagged", "untagged", "adons"], known) == [
        "nfz", "adons"]
