"""roles/ascend_driver agrees with ufcctl: the rollout's marker task, the generated chips table and
version pattern, and the role's settings checks run by Ansible on localhost (check mode). The node
module's own logic: test_ascend_driver_module.py."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.lab_standins.npu_emulator import npu_smi
from ufcctl.app import role_vars
from ufcctl.domain.inventory.validate import ACCELERATOR_TYPES
from ufcctl.domain.placement.profiles import chips_by_type
from ufcctl.domain.versions import VERSION_PATTERN
from ufcctl.rollout.kinds.upgrade_drivers import MARKER_TASK

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "ascend_driver"
GENERATED = yaml.safe_load((ROLE / "vars" / "main" / "generated.yml").read_text())
PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"
GOOD = {
    "ansible_connection": "local",
    "ansible_python_interpreter": sys.executable,
    "ascend_driver_version": "24.1.rc3",
    "ascend_driver_firmware_version": "7.5.0.2.220",
    "ascend_driver_artifact_url": "http://127.0.0.1:1/hdk",
    "npu_accelerator_type": "module-910b-8",
}


def test_the_rollout_marker_is_the_last_task_of_the_role_and_always_runs() -> None:
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    last = tasks[-1]
    assert last["name"] == MARKER_TASK, (
        "ufcctl/rollout/kinds/upgrade_drivers.py MARKER_TASK must name the last task")
    assert "when" not in last and "block" not in last
    # the only other marker is the no-op node's (issue 29): right before an end_role with the same
    # condition, so every node reaches exactly one marker and nothing runs after it
    names = [t["name"] for t in tasks]
    assert names.count(MARKER_TASK) == 2
    early = names.index(MARKER_TASK)
    assert tasks[early + 1]["ansible.builtin.meta"] == "end_role"
    assert tasks[early]["when"] == tasks[early + 1]["when"] == (
        "not (__ascend_driver_admission_due | bool or __ascend_driver_result.drain_needed | default(false))")
    assert tasks[early]["ansible.builtin.debug"] == last["ansible.builtin.debug"]


def test_generated_role_vars_are_current() -> None:
    assert role_vars.stale() == [], f"regenerate with `{role_vars.COMMAND}` and commit the result"


def test_the_role_counts_chips_for_exactly_the_types_inventory_check_accepts() -> None:
    table = GENERATED["__ascend_driver_registry_chips_by_type"]
    assert table == chips_by_type()
    assert list(table) == list(ACCELERATOR_TYPES)
    assert yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())["ascend_driver_chips_by_type"] == {}


def test_the_role_checks_versions_with_ufcctls_pattern() -> None:
    assert GENERATED["__ascend_driver_version_pattern"] == VERSION_PATTERN
    install = (ROLE / "tasks" / "install.yml").read_text()
    assert 'version_pattern: "{{ __ascend_driver_version_pattern }}"' in install


def test_the_role_runs_one_task_on_the_node_before_the_marker() -> None:
    """The point of issue 14: per node one action + module run, then the marker (handlers only after
    an install that asked for a reboot). A node of the cluster is then admitted (one kubectl run on the
    first control plane: tasks/admit.yml with its own gate check off)."""
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    keywords = ("name", "register", "timeout", "notify", "changed_when", "vars", "when")
    actions = [next(k for k in t if k not in keywords) for t in tasks]
    # import_tasks is static: install.yml's one task runs in its place (no host-task of its own)
    assert actions == ["ansible.builtin.import_tasks", "ansible.builtin.meta", "ansible.builtin.debug",
                       "ansible.builtin.meta", "ansible.builtin.include_tasks",
                       "ansible.builtin.include_tasks", "ansible.builtin.debug"]
    assert tasks[0]["ansible.builtin.import_tasks"] == "install.yml"
    install = yaml.safe_load((ROLE / "tasks" / "install.yml").read_text())
    assert [next(k for k in t if k not in keywords) for t in install] == ["ufc_ascend_driver"]
    # after the no-op's end_role: the in-play drain of a node the engine did not drain (drain_needed)
    assert tasks[4]["ansible.builtin.include_tasks"] == "drain_install.yml"
    assert tasks[5]["vars"] == {"__ascend_driver_admit_check": False}
    assert tasks[5]["ansible.builtin.include_tasks"] == "admit_node.yml"
    due = yaml.safe_load((ROLE / "vars" / "main" / "main.yml").read_text())["__ascend_driver_admission_due"]
    assert "inventory_hostname in groups['kube_node'] | default([])" in due
    # a node that installed nothing and whose admission record is current stops at the first marker
    # (issue 29): no admission include, no kubectl call on the first control plane
    assert "(__ascend_driver_result.admission_needed | default(true))" in due and "is changed" in due
    assert install[0]["ufc_ascend_driver"]["admission_flag"] == "{{ __ascend_driver_admission_flag }}"
    assert not (ROLE / "templates").exists()


VALIDATE_PLAY = """
- name: The role in check mode
  hosts: all
  gather_facts: false
  tasks:
    - name: Run the role
      ansible.builtin.include_role:
        name: ascend_driver
        public: true
    - name: Chips the health gate expects
      ansible.builtin.debug:
        msg: "{{ __ascend_driver_expected | int }}"
"""


def _play(tmp_path: Path, play: str, hosts: dict[str, dict[str, Any]], *options: str,
          env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `play` with ansible-playbook on local-connection hosts; the json callback's report."""
    (tmp_path / "play.yml").write_text(play)
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")},
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        **(env or {}),
    }
    proc = subprocess.run(
        [str(PLAYBOOK_BIN), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"), *options],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    start = proc.stdout.find("{\n")  # ansible.cfg's profile_tasks prints its recap too
    assert start >= 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report, _ = json.JSONDecoder().raw_decode(proc.stdout[start:])
    return dict(report)


def _results(report: dict[str, Any], task: str) -> dict[str, dict[str, Any]]:
    return {
        host: result
        for play in report["plays"]
        for t in play["tasks"]
        if t["task"]["name"].endswith(task)
        for host, result in t["hosts"].items()
    }


def _failures(report: dict[str, Any]) -> dict[str, str]:
    """host -> message of its failed task."""
    failed: dict[str, str] = {}
    for play in report["plays"]:
        for t in play["tasks"]:
            for host, result in t["hosts"].items():
                if result.get("failed"):
                    items = result.get("results") or [result]
                    failed[host] = " ".join(str(r.get("msg", "")) for r in items if r.get("failed"))
    return failed


@pytest.fixture(scope="module")
def validated(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    tmp = tmp_path_factory.mktemp("validate")
    pwned = tmp / "pwned"
    # check mode: the module reads this machine and changes nothing; the lock and the install path
    # are the test's own
    local = {"__ascend_driver_lock": str(tmp / "lock"), "ascend_driver_install_path": str(tmp / "Ascend"),
             "ascend_driver_download_dir": str(tmp / "cache")}
    hosts = {f"type-{t}": {**GOOD, "npu_accelerator_type": t} for t in ACCELERATOR_TYPES}
    hosts.update({
        "bad-type": {**GOOD, "npu_accelerator_type": "card-300i"},
        "evil-version": {**GOOD, "ascend_driver_version": f"1.0; touch {pwned}"},
        "evil-firmware": {**GOOD, "ascend_driver_firmware_version": f"$(touch {pwned})"},
        "evil-chip": {**GOOD, "ascend_driver_chip": "../910b"},
        "evil-arch": {**GOOD, "ascend_driver_arch": "x86_64 --evil"},
        "firmware-off": {
            **GOOD, "ascend_driver_firmware_enabled": False, "ascend_driver_firmware_version": ""
        },
        "site-type": {
            **GOOD, "npu_accelerator_type": "card-300i", "ascend_driver_chips_by_type": {"card-300i": 4}
        },
    })
    hosts = {name: {**local, **values} for name, values in hosts.items()}
    return _play(tmp, VALIDATE_PLAY, hosts, "--check"), pwned


def test_the_gate_knows_the_chips_of_every_type_inventory_check_accepts(validated) -> None:
    report, _ = validated
    expected = _results(report, "Chips the health gate expects")
    assert {h: int(r["msg"]) for h, r in expected.items() if h.startswith("type-")} == {
        f"type-{t}": n for t, n in chips_by_type().items()
    }
    assert int(expected["site-type"]["msg"]) == 4  # the inventory's table is merged over the registry's


def test_an_unknown_type_fails_validation_naming_the_known_ones(validated) -> None:
    message = _failures(validated[0])["bad-type"]
    assert "npu_accelerator_type 'card-300i' has no chip count" in message
    assert "module-910b-8" in message


@pytest.mark.parametrize(
    ("host", "variable"),
    [
        ("evil-version", "ascend_driver_version"),
        ("evil-firmware", "ascend_driver_firmware_version"),
        ("evil-chip", "ascend_driver_chip"),
        ("evil-arch", "ascend_driver_arch"),
    ],
)
def test_a_value_that_is_not_a_plain_word_is_refused_before_the_node_runs_anything(
    validated, host, variable
) -> None:
    report, pwned = validated
    message = _failures(report)[host]
    assert f"{variable} " in message and "is not a plain word" in message
    assert host not in _results(report, "Chips the health gate expects")  # the host stopped there
    assert not pwned.exists()


def test_plain_values_pass_and_check_mode_reports_the_packages(validated) -> None:
    report, _ = validated
    failures = _failures(report)
    assert not [h for h in failures if h.startswith("type-") or h in ("firmware-off", "site-type")], failures
    marker = _results(report, MARKER_TASK)
    assert "installed: Ascend-hdk-910b-npu-driver_24.1.rc3_linux-" in marker["type-module"]["msg"]
    assert "firmware" not in marker["firmware-off"]["msg"]
    assert not (validated[1].parent / "Ascend").exists() and not (validated[1].parent / "cache").exists()



HEALTH_PLAY = """
- name: The health-only run the role's handler does after a reboot
  hosts: all
  gather_facts: false
  tasks:
    - name: Health only
      ufc_ascend_driver:
        mode: health
        version: "24.1.rc3"
        expected_chips: 8
        npu_smi: "{{ npu_smi }}"
"""


def test_the_health_only_run_after_a_reboot_gates_on_chips_and_version(tmp_path: Path) -> None:
    """The handler's module run with only the health arguments (molecule cannot reboot a container)."""
    hosts = {}
    for name, bad, version in (("healthy", set(), "24.1.rc3"), ("bad-chip", {3}, "24.1.rc3"),
                               ("old-driver", set(), "24.1.rc2")):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            npu_smi.info(8, "910B3", bad, version)
        (tmp_path / f"{name}.txt").write_text(out.getvalue())
        fake = tmp_path / f"npu-smi-{name}"
        fake.write_text(f"#!/bin/sh\ncat '{tmp_path / (name + '.txt')}'\n")
        fake.chmod(0o755)
        hosts[name] = {**GOOD, "npu_smi": str(fake)}
    report = _play(tmp_path, HEALTH_PLAY, hosts, env={
        "ANSIBLE_LIBRARY": str(ROLE / "library"), "ANSIBLE_ACTION_PLUGINS": str(ROLE / "action_plugins"),
        # the role's own module_utils and ufc_common's, as a play that loads the role ships them
        "ANSIBLE_MODULE_UTILS": os.pathsep.join([str(ROLE / "module_utils"),
                                                 str(ROLE.parent / "ufc_common" / "module_utils")])})
    failures = _failures(report)
    assert "healthy" not in failures and _results(report, "Health only")["healthy"]["health"]["checked"]
    assert failures["bad-chip"] == "health gate: chips not OK: 3 Critical"
    assert failures["old-driver"] == "health gate: driver version 24.1.rc2, expected 24.1.rc3"
