"""`ufcctl certs renew` restarts kube-apiserver, kube-controller-manager and kube-scheduler in place
(roles/kube_control_plane tasks/restart_in_place.yml, included per component by tasks/certs_renew.yml).

The role's shell is rendered with Ansible's Templar and run with bash against stub `ctr`, `ss` and `sleep`
on PATH: the stubs share one state file and a fake clock that only `sleep` moves, so a run takes no real
time and every signal is logged at the second it was sent. The stub containerd plays the kubelet too:
once the component's container has exited it starts a new one in the pod, which listens again."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar

from tests.helpers.ansible_values import trusted

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "kube_control_plane"
SOCKET = "/run/containerd/containerd.sock"
LABEL = 'labels."io.kubernetes.container.name"=='

pytestmark = pytest.mark.skipif(not (shutil.which("bash") and shutil.which("awk") and shutil.which("seq")),
                                reason="needs bash, awk and seq")


@pytest.fixture(scope="module", autouse=True)
def _plugins() -> None:
    init_plugin_loader()


def _tasks(name: str) -> list[dict[str, Any]]:
    return yaml.safe_load((ROLE / "tasks" / name).read_text())


def _task(name: str, start: str) -> dict[str, Any]:
    return next(t for t in _tasks(name) if t["name"].startswith(start))


def _render(value: Any, variables: dict[str, Any]) -> Any:
    return Templar(loader=DataLoader(), variables=trusted(variables)).template(trusted(value))


def _whens(task: dict[str, Any]) -> list[str]:
    when = task.get("when", [])
    return [when] if isinstance(when, str) else list(when)


# ---- the task files ---------------------------------------------------------------------------------


def _include() -> dict[str, Any]:
    block = next(t for t in _tasks("certs_renew.yml") if "block" in t)
    return next(t for t in block["block"] if t.get("ansible.builtin.include_tasks") == "restart_in_place.yml")


@pytest.mark.parametrize(("renew", "components"), [
    (True, [("kube-apiserver", 6443), ("kube-controller-manager", 10257), ("kube-scheduler", 10259)]),
    (False, [("kube-apiserver", 6443)]),  # roles/etcd renewed the apiserver's etcd client certificate only
])
def test_certs_renew_restarts_each_component_through_the_one_task_file(
        renew: bool, components: list[tuple[str, int]]) -> None:
    include = _include()
    assert include["loop_control"]["loop_var"] == "__kube_control_plane_component"
    assert _whens(include) == ["not ansible_check_mode"]  # a check run restarts nothing
    variables = {**yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()),
                 "__kube_control_plane_renew_components": yaml.safe_load(
                     (ROLE / "vars" / "main.yml").read_text())["__kube_control_plane_renew_components"],
                 "kube_control_plane_certs_renew": renew}
    loop = _render(include["loop"], variables)
    assert [(c["name"], int(c["port"])) for c in loop] == components
    # the old inline restarts are gone: the manifest move lives in restart_in_place.yml only
    text = (ROLE / "tasks" / "certs_renew.yml").read_text()
    assert "apiserver_pause.yml" not in text.split("\n- name:", 1)[1] and "mv " not in text


def test_the_grace_is_a_declared_variable_of_five_seconds() -> None:
    assert yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())[
        "kube_control_plane_restart_grace_seconds"] == 5
    spec = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    assert options["kube_control_plane_restart_grace_seconds"]["type"] == "int"


def test_the_in_place_shell_signals_sigterm_then_sigkill_after_the_grace_and_skips_check_mode() -> None:
    task = _task("restart_in_place.yml", "Restart the component in place")
    shell = task["ansible.builtin.shell"]
    text = shell["cmd"]
    assert shell["executable"] == "/bin/bash" and text.startswith("set -o pipefail\n")
    assert "{{ kube_control_plane_restart_grace_seconds | int }}" in text
    assert text.index("signal SIGTERM") < text.index('seq "$grace"') < text.index("signal SIGKILL")
    assert "not ansible_check_mode" in _whens(task)
    assert task["failed_when"] == "__kube_control_plane_restarted.rc not in [0, 3]"
    assert task["changed_when"] == "__kube_control_plane_restarted.rc == 0"


def test_rc_3_falls_back_to_the_old_restarts_and_rc_0_waits_for_readyz() -> None:
    tasks = _tasks("restart_in_place.yml")
    rc3 = "__kube_control_plane_restarted.rc | default(-1) == 3"
    pause = [t for t in tasks if t.get("ansible.builtin.include_tasks") == "apiserver_pause.yml"]
    assert [t["vars"]["kube_control_plane_apiserver_state"] for t in pause] == ["stopped", "started"]
    assert all(rc3 in _whens(t) and "__kube_control_plane_component.name == 'kube-apiserver'" in _whens(t)
               for t in pause)
    moved = _task("restart_in_place.yml", "Restart the component the old way")
    assert rc3 in _whens(moved) and "__kube_control_plane_component.name != 'kube-apiserver'" in _whens(moved)
    assert "mv " in moved["ansible.builtin.shell"]["cmd"]
    readyz = _task("restart_in_place.yml", "Wait until kube-apiserver answers /readyz")
    assert "__kube_control_plane_restarted.rc | default(-1) == 0" in _whens(readyz)
    names = [t["name"] for t in tasks]
    in_place = _task("restart_in_place.yml", "Restart the component in place")["name"]
    assert names.index(readyz["name"]) > names.index(in_place)


# ---- the shell, run against stub ctr, ss and sleep ----------------------------------------------------

STUB = r'''
import json, sys
from pathlib import Path

STATE = Path(__file__).resolve().parent.parent / "state.json"
s = json.loads(STATE.read_text())
tool, args = Path(sys.argv[1]).name, sys.argv[2:]  # the wrapper passes its own path first


def evolve():
    """What the component and the kubelet did by now on the fake clock."""
    now, old = s["clock"], s["containers"].get("old")
    if s.get("term_at") is not None and old and old["status"] == "RUNNING":
        if now >= s["term_at"] + s["close_after_term"]:
            s["listening"] = False
        if s["exit_after_term"] is not None and now >= s["term_at"] + s["exit_after_term"]:
            old["status"], s["exited_at"], s["listening"] = "STOPPED", now, False
    if (s.get("exited_at") is not None and "new" not in s["containers"]
            and s["restart_after_exit"] is not None and now >= s["exited_at"] + s["restart_after_exit"]):
        s["containers"]["new"] = {"name": old["name"], "namespace": "kube-system", "status": "RUNNING"}
        s["listening"] = True


def save():
    STATE.write_text(json.dumps(s))


if tool == "sleep":
    s["clock"] += int(float(args[0]))
    save()
    sys.exit(0)
evolve()
if tool == "ss":  # ss -Htln 'sport = :PORT'
    if s["listening"] and args[-1] == "sport = :%d" % s["port"]:
        print("LISTEN 0 4096 *:%d *:*" % s["port"])
    save()
    sys.exit(0)
# ctr --address A --namespace N ...
options = {}
while args and args[0].startswith("--"):
    options[args[0]], args = args[1], args[2:]
s["calls"].append({"options": options, "args": args})
if args[:3] == ["containers", "ls", "-q"]:
    wanted = dict(part.split("==") for part in args[3].split(","))
    for cid, c in s["containers"].items():
        if (wanted.get('labels."io.kubernetes.container.name"') == c["name"]
                and wanted.get('labels."io.kubernetes.pod.namespace"') == c["namespace"]):
            print(cid)
elif args[:2] == ["tasks", "ls"]:
    print("TASK    PID     STATUS")
    for n, (cid, c) in enumerate(s["containers"].items()):
        if c["status"] != "DELETED":
            print("%s    %d    %s" % (cid, 100 + n, c["status"]))
elif args[:3] == ["tasks", "kill", "--signal"]:
    signal, cid = args[3], args[4]
    c = s["containers"].get(cid)
    if not c or c["status"] != "RUNNING":
        print("ctr: task %s not found" % cid, file=sys.stderr)
        save()
        sys.exit(1)
    s["signals"].append([s["clock"], signal, cid])
    if signal == "SIGTERM" and s.get("term_at") is None:
        s["term_at"] = s["clock"]
    if signal == "SIGKILL":
        c["status"], s["exited_at"], s["listening"] = "STOPPED", s["clock"], False
else:
    print("stub ctr: not emulated: %s" % args, file=sys.stderr)
    save()
    sys.exit(2)
save()
'''


def _run(tmp_path: Path, *, name: str = "kube-apiserver", port: int = 6443, grace: int = 5,
         containers: dict[str, dict[str, str]] | None = None, close_after_term: int = 3,
         exit_after_term: int | None = None, restart_after_exit: int | None = 2,
         with_ctr: bool = True) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run the role's in-place shell for `name` on `port`; the state the stubs ended with."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "stub.py"
    stub.write_text(STUB)
    for tool in ("ss", "sleep", *(["ctr"] if with_ctr else [])):
        wrapper = bin_dir / tool
        wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S "{stub}" "$0" "$@"\n')
        wrapper.chmod(0o755)
    for tool in ("awk", "seq"):  # the real ones; nothing else from the host's PATH (no real ctr)
        (bin_dir / tool).symlink_to(shutil.which(tool))  # type: ignore[arg-type]
    if containers is None:
        containers = {"old": {"name": name, "namespace": "kube-system", "status": "RUNNING"}}
    state = {"clock": 0, "port": port, "listening": True, "containers": containers,
             "close_after_term": close_after_term, "exit_after_term": exit_after_term,
             "restart_after_exit": restart_after_exit, "signals": [], "calls": []}
    (tmp_path / "state.json").write_text(json.dumps(state))
    task = _task("restart_in_place.yml", "Restart the component in place")
    variables = {"__kube_control_plane_component": {"name": name, "port": port},
                 "kube_control_plane_restart_grace_seconds": grace,
                 "kube_control_plane_cri_socket": f"unix://{SOCKET}"}
    script = _render(task["ansible.builtin.shell"]["cmd"], variables)
    proc = subprocess.run([shutil.which("bash"), "-c", str(script)], capture_output=True, text=True,  # type: ignore[list-item]
                          env={"PATH": str(bin_dir)}, timeout=120, check=False)
    return proc, json.loads((tmp_path / "state.json").read_text())


@pytest.mark.parametrize("grace", [5, 0])
def test_a_draining_apiserver_gets_sigterm_then_sigkill_once_its_port_closed_and_the_grace_passed(
        tmp_path: Path, grace: int) -> None:
    """kube-apiserver closes its port 3 s after SIGTERM but would drain watches for 60 s more."""
    proc, state = _run(tmp_path, grace=grace, close_after_term=3, exit_after_term=60, restart_after_exit=2)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert state["signals"] == [[0, "SIGTERM", "old"], [3 + grace, "SIGKILL", "old"]]
    assert state["containers"]["new"]["status"] == "RUNNING" and state["listening"]
    assert state["clock"] == 3 + grace + 2  # the kubelet's new container listened 2 s after the kill
    said = [line.split(" at ")[0] for line in proc.stdout.splitlines()]  # the times are bash's real $SECONDS
    assert said == ["kube-apiserver: SIGTERM", "kube-apiserver: port 6443 closed (or the container gone)",
                    "kube-apiserver: SIGKILL", "kube-apiserver: port 6443 open"]
    assert {(c["options"]["--namespace"], c["options"]["--address"]) for c in state["calls"]} == {
        ("k8s.io", SOCKET)}


def test_a_component_that_exits_on_sigterm_gets_no_sigkill(tmp_path: Path) -> None:
    proc, state = _run(tmp_path, name="kube-scheduler", port=10259, close_after_term=1, exit_after_term=1,
                       restart_after_exit=1)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert state["signals"] == [[0, "SIGTERM", "old"]]
    assert state["clock"] == 2


def test_only_the_running_container_of_the_component_is_signalled(tmp_path: Path) -> None:
    containers = {
        "dead": {"name": "kube-controller-manager", "namespace": "kube-system", "status": "STOPPED"},
        "gone": {"name": "kube-controller-manager", "namespace": "kube-system", "status": "DELETED"},
        "other-ns": {"name": "kube-controller-manager", "namespace": "default", "status": "RUNNING"},
        "etcd": {"name": "etcd", "namespace": "kube-system", "status": "RUNNING"},
        "old": {"name": "kube-controller-manager", "namespace": "kube-system", "status": "RUNNING"},
    }
    proc, state = _run(tmp_path, name="kube-controller-manager", port=10257, containers=containers)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [cid for _, _, cid in state["signals"]] == ["old", "old"]


@pytest.mark.parametrize("case", ["no running container", "no container", "no ctr"])
def test_rc_3_and_no_signal_when_no_running_container_is_found(tmp_path: Path, case: str) -> None:
    containers = {"old": {"name": "kube-apiserver", "namespace": "kube-system", "status": "STOPPED"},
                  "cm": {"name": "kube-controller-manager", "namespace": "kube-system", "status": "RUNNING"}}
    if case == "no container":
        containers = {}
    proc, state = _run(tmp_path, containers=containers, with_ctr=case != "no ctr")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert state["signals"] == [] and state["clock"] == 0


def test_once_a_signal_is_sent_the_shell_never_exits_3() -> None:
    """rc 3 means nothing was signalled: the old restart must never run on top of an in-place one (a
    component that does not come back fails the task instead). Read, not run: the stubs would need 240 calls
    to reach the 120 s timeout."""
    text = _task("restart_in_place.yml", "Restart the component in place")["ansible.builtin.shell"]["cmd"]
    after = text[text.index("signal SIGTERM\n"):]
    assert "exit 3" in text and "exit 3" not in after
    assert after.rstrip().endswith("not open again within 120 s\"; exit 1")
