"""The ansible-runner adapter against real ansible-runner, on localhost with the local connection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ufcctl.domain.inventory.model import Host
from ufcctl.engine.run_inventory import render_inventory
from ufcctl.engine.runner import RunOptions, run_playbook

PLAYBOOK = """
- hosts: all
  gather_facts: false
  tasks:
    - name: always ok
      ansible.builtin.command: "true"
      changed_when: false
    - name: changes a file
      ansible.builtin.copy:
        dest: "{{ out_dir }}/{{ inventory_hostname }}.txt"
        content: "{{ greeting }}\\n"
    - name: fails on bad hosts
      ansible.builtin.fail:
        msg: "bad host {{ inventory_hostname }}"
      when: "'bad' in group_names"
    - name: only good hosts get here
      ansible.builtin.command: "true"
      changed_when: false
"""


def _host(name: str, groups: set[str], **vars: object) -> Host:
    base = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    return Host(name=name, vars={**base, **vars}, groups=frozenset(groups | {"all"}))


@pytest.fixture()
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    (tmp_path / "out").mkdir()
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    return tmp_path


def test_render_inventory_holds_only_given_hosts_and_their_groups() -> None:
    hosts = [_host("a", {"kube_node", "npu_node"}, x=1), _host("b", {"kube_control_plane"})]
    inv = render_inventory(hosts)
    assert set(inv["all"]["hosts"]) == {"a", "b"}
    assert inv["all"]["hosts"]["a"]["x"] == 1
    assert set(inv["all"]["children"]) == {"kube_node", "npu_node", "kube_control_plane"}
    assert set(inv["all"]["children"]["npu_node"]["hosts"]) == {"a"}


def test_run_reports_per_host_results_and_keeps_only_failures(workdir: Path) -> None:
    hosts = [
        _host("good1", {"kube_node"}, out_dir=str(workdir / "out"), greeting="hi"),
        _host("good2", {"kube_node"}, out_dir=str(workdir / "out"), greeting="hello"),
        _host("bad1", {"kube_node", "bad"}, out_dir=str(workdir / "out"), greeting="x"),
    ]
    seen: list[tuple[str, str]] = []

    class Observer:
        def run_started(self, run_id: str, names: list[str]) -> None:
            seen.append(("start", ",".join(sorted(names))))

        def task_started(self, run_id: str, task: str) -> None:
            seen.append(("task", task))

        def host_task_done(self, run_id, host, task, status, message) -> None:  # type: ignore[no-untyped-def]
            seen.append((host, status))

        def run_finished(self, result) -> None:  # type: ignore[no-untyped-def]
            seen.append(("finished", result.status))

    result = run_playbook(workdir / "play.yml", hosts, RunOptions(forks=3), observer=Observer())
    assert result.status == "failed" and result.rc != 0
    assert result.hosts["good1"].status == "changed"
    assert result.hosts["good1"].ok == 3 and result.hosts["good1"].changed == 1
    assert result.hosts["bad1"].status == "failed"
    assert result.hosts["bad1"].failed_task == "fails on bad hosts"
    assert "bad host bad1" in (result.hosts["bad1"].message or "")
    assert result.failed_hosts == ["bad1"]
    assert (workdir / "out" / "good2.txt").read_text() == "hello\n"
    assert ("task", "changes a file") in seen and ("bad1", "failed") in seen
    assert seen[-1] == ("finished", "failed")

    # artifacts: a summary and one failure line; no per-event files are left behind
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["hosts"]["bad1"]["status"] == "failed"
    failures = (result.run_dir / "failures.jsonl").read_text().splitlines()
    assert len(failures) == 1 and json.loads(failures[0])["host"] == "bad1"
    job_events = list(result.run_dir.rglob("job_events/*.json"))
    assert job_events == []
    inventory_file = result.run_dir / "inventory" / "hosts.json"
    assert oct(inventory_file.stat().st_mode & 0o777) == "0o600"


def test_the_runner_settings_reach_ansible_runner(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ansible-runner 2.4 drops a `settings=` argument when env/settings is missing (suppress_env_files):
    # a stop was then seen only every 5 s and the stdout copy was written anyway
    import ansible_runner.runner

    seen: list[tuple[object, object]] = []
    original = ansible_runner.runner.Runner.run

    def run(self: Any) -> Any:
        seen.append((self.config.pexpect_timeout, self.config.suppress_output_file))
        return original(self)

    monkeypatch.setattr(ansible_runner.runner.Runner, "run", run)
    host = _host("good1", {"kube_node"}, out_dir=str(workdir / "out"), greeting="hi")
    for _ in range(2):  # a second run in the same directory (a resumed chunk) gets them as well
        result = run_playbook(workdir / "play.yml", [host], RunOptions(), run_id="same-run")
        assert result.succeeded, result
    assert seen == [(1, True), (1, True)]
    assert not (result.run_dir / "artifacts" / "ansible" / "stdout").exists()


def test_second_run_is_ok_and_check_mode_changes_nothing(workdir: Path) -> None:
    hosts = [_host("solo", {"kube_node"}, out_dir=str(workdir / "out"), greeting="hi")]
    first = run_playbook(workdir / "play.yml", hosts, RunOptions())
    assert first.succeeded and first.hosts["solo"].changed == 1
    second = run_playbook(workdir / "play.yml", hosts, RunOptions())
    assert second.succeeded and second.hosts["solo"].changed == 0
    hosts = [_host("solo", {"kube_node"}, out_dir=str(workdir / "out"), greeting="changed")]
    checked = run_playbook(workdir / "play.yml", hosts, RunOptions(check=True))
    assert checked.hosts["solo"].changed == 1  # would change ...
    assert (workdir / "out" / "solo.txt").read_text() == "hi\n"  # ... but did not


def test_unreachable_host_is_reported(workdir: Path) -> None:
    host = Host(
        name="nowhere",
        # a closed port on loopback: refused at once, no traffic leaves this machine
        vars={"ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_connection": "ssh",
              "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"},
        groups=frozenset({"all"}),
    )
    result = run_playbook(workdir / "play.yml", [host], RunOptions())
    assert result.hosts["nowhere"].status == "unreachable"
    assert result.failed_hosts == ["nowhere"]


def test_syntax_error_surfaces_ansible_output(workdir: Path) -> None:
    (workdir / "broken.yml").write_text(
        "- hosts: all\n  tasks:\n    - name: x\n      no_such_module_xyz: {}\n")
    result = run_playbook(workdir / "broken.yml", [_host("h", set())], RunOptions())
    assert result.rc != 0 and not result.succeeded
    assert result.hosts == {}
    assert any("no_such_module_xyz" in line for line in result.output_tail)


ENV_PLAYBOOK = """
- hosts: all
  gather_facts: false
  tasks:
    - name: Write what this run was given
      ansible.builtin.copy:
        content: "{{ lookup('ansible.builtin.env', 'UFC_TEST_GIVEN') }} {{ given }}\\n"
        dest: "{{ out_dir }}/given.txt"
        mode: "0600"
"""


def test_a_second_run_under_the_same_run_id_gets_its_own_environment_and_variables(workdir: Path) -> None:
    # a resumed rollout runs its chunks under the run ids of the first attempt
    (workdir / "env.yml").write_text(ENV_PLAYBOOK)
    hosts = [_host("solo", {"kube_node"}, out_dir=str(workdir / "out"))]
    for value in ("first", "second"):
        result = run_playbook(workdir / "env.yml", hosts, RunOptions(extravars={"given": value}),
                              run_id="same-run", env={"UFC_TEST_GIVEN": value})
        assert result.succeeded, result
        assert (workdir / "out" / "given.txt").read_text() == f"{value} {value}\n"


CONTEXT_PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: write what the play sees (groups, the context host's vars)
      ansible.builtin.copy:
        dest: "{{ out_dir }}/{{ inventory_hostname }}.json"
        content: >-
          {{ {'cps': groups['kube_control_plane'] | default([]),
              'cp_var': hostvars['cp1'].marker | default('')} | to_json }}
    - name: a task delegated to the first control plane
      ansible.builtin.command: "echo {{ inventory_hostname }}"
      delegate_to: "{{ groups['kube_control_plane'][0] }}"
      changed_when: false
"""


def test_context_hosts_are_in_the_inventory_but_never_run_on(workdir: Path) -> None:
    (workdir / "context.yml").write_text(CONTEXT_PLAY)
    out = str(workdir / "out")
    workers = [_host("w1", {"kube_node"}, out_dir=out), _host("w2", {"kube_node"}, out_dir=out)]
    cp = _host("cp1", {"kube_control_plane"}, out_dir=out, marker="from-cp1")
    result = run_playbook(workdir / "context.yml", workers, RunOptions(context=(cp,)))
    assert result.succeeded, result.output_tail
    assert set(result.hosts) == {"w1", "w2"} and result.not_run == []
    assert not (workdir / "out" / "cp1.json").exists()  # the context host ran no play
    seen = json.loads((workdir / "out" / "w1.json").read_text())
    assert seen["cps"] == ["cp1"] and seen["cp_var"] == "from-cp1"
    assert result.hosts["w1"].ok == 2  # the delegated task ran (for w1, on cp1)
    written = json.loads((result.run_dir / "inventory" / "hosts.json").read_text())
    assert set(written["all"]["hosts"]) == {"w1", "w2", "cp1"}

    # a target that is also in the context is a target, once
    both = run_playbook(workdir / "context.yml", [*workers, cp], RunOptions(context=(cp,)))
    assert set(both.hosts) == {"w1", "w2", "cp1"} and both.succeeded
    with pytest.raises(ValueError, match="no --limit"):
        run_playbook(workdir / "context.yml", workers, RunOptions(context=(cp,), limit="w1"))


LOOP_PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: a loop with one failing item
      ansible.builtin.fail:
        msg: "item {{ item }} is broken"
      when: item == 'b'
      loop: [a, b, c]
"""


def test_a_failed_loop_reports_its_first_failed_items_message(workdir: Path) -> None:
    (workdir / "loop.yml").write_text(LOOP_PLAY)
    result = run_playbook(workdir / "loop.yml", [_host("solo", {"kube_node"})], RunOptions())
    assert result.hosts["solo"].message == "item b is broken"  # not Ansible's "One or more items failed"
