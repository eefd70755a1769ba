"""deploy-nodes' fast path (playbooks/action_plugins/ufc_node_state.py, playbooks/library/ufc_node_state.py):
the judgement of a node's record, the inputs digest, and a real ansible-playbook round trip (local
connection, no container): a second run with the same inputs is at target, a changed inventory variable,
a hand-edited file or --full is not, and a node not at target loses its record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.pyimports import load_file
from ufcctl.rollout.kinds import deploy_nodes

ROOT = Path(__file__).resolve().parents[3]
mod = load_file(ROOT / "playbooks" / "library" / "ufc_node_state.py", "ufc_node_state_module")
action = load_file(ROOT / "playbooks" / "action_plugins" / "ufc_node_state.py", "ufc_node_state_action")


def _record(**over: Any) -> dict:
    base = {"version": mod.VERSION, "digest": "d1", "files": {"/etc/a": "h1"},
            "stat": {"/usr/bin/kubelet": [5, 7]}, "packages": {"containerd": "1.6"},
            "services": ["containerd.service"], "modules": ["br_netfilter"],
            "sysctl": {"net.ipv4.ip_forward": "1"}}
    return base | over


def _now(**over: Any) -> dict:
    base = {"files": {"/etc/a": "h1"}, "stat": {"/usr/bin/kubelet": [5, 7]},
            "packages": {"containerd": "1.6"},
            "services": {"containerd.service": True}, "modules": {"br_netfilter": True},
            "sysctl": {"net.ipv4.ip_forward": "1"}}
    return base | over


def test_a_node_that_looks_as_recorded_with_the_same_inputs_is_at_target() -> None:
    assert mod.judge(_record(), "d1", _now()) == []


@pytest.mark.parametrize(("record", "digest", "now", "why"), [
    (None, "d1", None, "no record"),
    (_record(version=0), "d1", _now(), "record version"),
    (_record(), "d2", _now(), "inputs changed"),
    (_record(), "d1", _now(files={"/etc/a": "edited"}), "/etc/a changed"),
    (_record(), "d1", _now(files={"/etc/a": None}), "/etc/a changed or is missing"),
    (_record(), "d1", _now(stat={"/usr/bin/kubelet": [5, 8]}), "/usr/bin/kubelet changed"),
    (_record(), "d1", _now(packages={"containerd": "1.7"}), "package containerd is 1.7, was 1.6"),
    (_record(), "d1", _now(packages={"containerd": None}), "package containerd is not installed"),
    (_record(), "d1", _now(services={"containerd.service": False}), "containerd.service is not active"),
    (_record(), "d1", _now(modules={"br_netfilter": False}), "br_netfilter is not loaded"),
    (_record(), "d1", _now(sysctl={"net.ipv4.ip_forward": "0"}), "sysctl net.ipv4.ip_forward is '0'"),
])
def test_anything_else_takes_the_full_path(record: dict | None, digest: str, now: dict | None,
                                           why: str) -> None:
    reasons = mod.judge(record, digest, now)
    assert reasons and any(why in r for r in reasons), reasons


class _Systemd:
    """What ufcctl_systemd asks of the module: systemctl's path and one `systemctl show` answer."""

    def __init__(self, states: dict[str, str] | None = None) -> None:
        self.states, self.calls = states or {}, []

    def get_bin_path(self, name: str) -> str | None:
        return "/usr/bin/systemctl" if name == "systemctl" else None

    def run_command(self, argv: list[str]) -> tuple[int, str, str]:
        self.calls.append(argv)
        units = argv[argv.index("--") + 1:]
        return 0, "\n".join(f"Id={u}\nNames={u}\nActiveState={self.states.get(u, 'inactive')}\n"
                            f"UnitFileState=enabled\n" for u in units), ""


def test_services_are_read_in_one_systemctl_show_and_only_active_counts() -> None:
    systemd = _Systemd({"containerd.service": "active", "kubelet.service": "reloading"})
    assert mod.active_services(systemd, ["containerd.service", "kubelet.service", "gone.service"]) == {
        "containerd.service": True, "kubelet.service": False, "gone.service": False}
    assert len(systemd.calls) == 1 and systemd.calls[0][1] == "show"
    assert mod.active_services(systemd, []) == {} and len(systemd.calls) == 1


def test_no_record_is_written_for_a_node_missing_what_the_roles_leave(tmp_path: Path) -> None:
    params = {"digest": "d", "files": [], "stat": [], "packages": [], "services": [], "modules": [],
              "sysctl": [], "require": [str(tmp_path / "kubelet.conf")]}
    record, why = mod.build_record(params, _Systemd())
    assert record is None and why == [f"{tmp_path / 'kubelet.conf'} is missing"]
    (tmp_path / "kubelet.conf").write_text("x")
    record, why = mod.build_record(params | {"files": [str(tmp_path / "gone")]}, _Systemd())
    assert record is None and why == [f"{tmp_path / 'gone'} missing"]
    record, why = mod.build_record(params, _Systemd())
    assert why == [] and record is not None and str(tmp_path / "kubelet.conf") in record["stat"]


def test_the_digest_ignores_run_magic_but_not_inputs_nor_cluster_groups(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("CA1")
    base = {"inventory_hostname": "w1", "group_names": ["kube_node"],
            "container_runtime_sandbox_image": "p:3",
            "groups": {"kube_node": ["w1", "w2"], "kube_control_plane": ["cp1"]}, "hostvars": {"w1": {}},
            "omit": "__omit_1", "ansible_play_batch": ["w1"], "ufc_rollout_gate": {"answer": "go"},
            "ansible_inventory_sources": ["/tmp/run1/inventory"], "ansible_check_mode": False}

    def digest(**over: Any) -> str:
        return action.inputs_digest(base | over, [str(ROOT / "playbooks")], [str(ca)])

    first = digest()
    assert digest(omit="__omit_2", ansible_play_batch=["w1", "w2"], ufc_rollout_gate={"answer": "go", "x": 1},
                  ansible_inventory_sources=["/tmp/run2/inventory"], hostvars={"w1": {}, "w3": {}},
                  groups={"kube_node": ["w1", "w2", "w3"], "kube_control_plane": ["cp1"]}) == first
    assert digest(container_runtime_sandbox_image="p:4") != first
    assert digest(group_names=["kube_node", "npu_node"]) != first
    assert digest(groups={"kube_node": ["w1"], "kube_control_plane": ["cp2"]}) != first
    ca.write_text("CA2")
    assert digest() != first


def test_the_digest_ignores_what_the_strategy_sets_per_task(tmp_path: Path) -> None:
    """ansible_current_hosts (the chunk's hosts in start order, which changes when the engine starts
    the longest recorded node first) once sent a fresh lab's second node phase down the full path.
    Whatever Ansible's strategy adds to every task's variables is run state, not an input."""
    from ansible.plugins.strategy import StrategyBase

    class Strategy:
        def __init__(self, hosts: list[str]) -> None:
            self.hosts = hosts

        def get_hosts_remaining(self, play: object) -> list[str]:
            return self.hosts

        def get_failed_hosts(self, play: object) -> list[str]:
            return self.hosts[:1]

    def digest(hosts: list[str]) -> str:
        task_vars: dict[str, Any] = {"inventory_hostname": "w1", "some_setting": "a"}
        StrategyBase.add_tqm_variables(Strategy(hosts), task_vars, None)  # type: ignore[arg-type]
        assert len(task_vars) > 2  # the strategy did add its variables
        return action.inputs_digest(task_vars, [], [])

    assert digest(["w1", "w2", "w3"]) == digest(["w3", "w1"])


def test_a_missed_probe_names_the_inputs_that_changed_never_their_values() -> None:
    old = {"var:a": "1", "var:secret_token": "2", "code": "c1", "file:/ca.crt": "f"}
    new = {"var:a": "1", "var:secret_token": "3", "code": "c2", "var:added": "4", "file:/ca.crt": "f"}
    assert action.changed_inputs(old, new) == (
        "inputs changed since the last full run: code, added, secret_token")
    many = {f"var:v{i}": "x" for i in range(12)}
    assert action.changed_inputs({}, many, limit=3).endswith(": v0, v1, v10 and 9 more")
    assert action.changed_inputs(new, new) == ""


def test_the_digest_covers_the_code_that_renders(tmp_path: Path) -> None:
    role = tmp_path / "roles" / "r" / "templates"
    role.mkdir(parents=True)
    (role / "a.j2").write_text("one")
    first = action.tree_digest([str(tmp_path / "roles")])
    (role / "a.j2").write_text("two")
    assert action.tree_digest([str(tmp_path / "roles")]) != first


def test_full_is_passed_to_the_playbook() -> None:
    assert deploy_nodes.KIND.extravars(deploy_nodes.nodes_options(full=True)) == {deploy_nodes.FULL_VAR: True}
    assert deploy_nodes.KIND.extravars(deploy_nodes.nodes_options()) == {}


def test_the_playbook_ends_a_node_at_target_at_the_marker_before_any_role() -> None:
    play = yaml.safe_load((ROOT / "playbooks" / "deploy-nodes.yml").read_text())[0]
    names = [t.get("name") for t in play["pre_tasks"]]
    probe = next(i for i, t in enumerate(play["pre_tasks"]) if "ufc_node_state" in t)
    assert names[probe + 1] == deploy_nodes.MARKER_TASK
    assert play["pre_tasks"][probe + 2]["ansible.builtin.meta"] == "end_host"
    assert play["pre_tasks"][probe + 1]["when"] == play["pre_tasks"][probe + 2]["when"]
    # the record: kube_node includes it right before its marker, and only this play names it
    assert "tasks" not in play and play["vars"]["kube_node_state_record_tasks"].endswith(
        "/tasks/node-state-record.yml")
    record = yaml.safe_load((ROOT / "playbooks" / "tasks" / "node-state-record.yml").read_text())
    assert [t["ufc_node_state"]["mode"] for t in record] == ["record"]
    kube_node = yaml.safe_load((ROOT / "roles" / "kube_node" / "tasks" / "main.yml").read_text())
    assert kube_node[-2]["ansible.builtin.include_tasks"] == "{{ kube_node_state_record_tasks }}"


PLAY = """
- name: Fast path round trip
  hosts: all
  gather_facts: false
  tasks:
    - name: Probe
      ufc_node_state:
        mode: probe
        path: "{{ record }}"
        full: "{{ ufc_node_state_full | default(false) }}"
        code: ["{{ code }}"]
        controller_files: []
      register: probe
    - name: Show
      ansible.builtin.copy:
        content: "{{ probe | to_json }}"
        dest: "{{ out }}"
      delegate_to: localhost
      check_mode: false
    - name: Record
      ufc_node_state:
        mode: record
        path: "{{ record }}"
        digest: "{{ probe.digest }}"
        parts: "{{ probe.parts | default({}) }}"
        files: ["{{ managed }}"]
      when: not probe.at_target and not ansible_check_mode
"""


def _run(tmp_path: Path, *extra: str, setting: str = "a") -> dict:
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"n1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "some_setting": setting}}}}))
    out = tmp_path / "probe.json"
    extravars = {"record": str(tmp_path / "node" / "record.json"), "managed": str(tmp_path / "managed.conf"),
                 "code": str(tmp_path / "code"), "out": str(out)}
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "ANSIBLE_LIBRARY": str(ROOT / "playbooks" / "library"),
           "ANSIBLE_MODULE_UTILS": str(ROOT / "roles" / "ufc_common" / "module_utils"),
           "ANSIBLE_ACTION_PLUGINS": str(ROOT / "playbooks" / "action_plugins")}
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           str(tmp_path / "play.yml"), "-e", json.dumps(extravars), *extra],
                          env=env, cwd=ROOT, capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_a_second_run_is_at_target_and_a_changed_input_or_edit_is_not(tmp_path: Path) -> None:
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "t.j2").write_text("v1")
    (tmp_path / "managed.conf").write_text("rendered")
    record = tmp_path / "node" / "record.json"
    first = _run(tmp_path)
    assert first["at_target"] is False and record.is_file()
    second = _run(tmp_path)
    assert second["at_target"] is True and second["digest"] == first["digest"], second
    # the node's reason in the rollout's summary says which path it took and why
    assert first["ufc_node_report"] == "full path: no record of a full run", first
    assert second["ufc_node_report"] == "at target (fast path)"
    (tmp_path / "managed.conf").write_text("edited by hand")
    edited = _run(tmp_path, "--check")
    assert edited["at_target"] is False and any("managed.conf" in w for w in edited["why"]), edited
    assert record.is_file()  # check mode removes nothing
    changed = _run(tmp_path, "-e", "ufc_node_state_full=false", setting="b")
    # the record's per-input digests name what changed (the variable's name, never its value)
    assert changed["at_target"] is False and changed["why"] == [
        "inputs changed since the last full run: some_setting"], changed


def test_the_npu_paths_are_roles_ascend_driver_own() -> None:
    play = yaml.safe_load((ROOT / "playbooks" / "deploy-nodes.yml").read_text())[0]
    driver = yaml.safe_load((ROOT / "roles" / "ascend_driver" / "vars" / "main" / "main.yml").read_text())
    assert play["vars"]["ufc_node_state_npu_paths"] == [driver["__ascend_driver_npu_smi"],
                                                        driver["__ascend_driver_admission_flag"]]
