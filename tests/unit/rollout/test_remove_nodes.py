"""The remove-nodes kind: control planes and etcd members refused before anything is touched, the
kind's settings, and kill -9 in the middle then `ufcctl resume`: no node done twice, no node cordoned
without a record. Ansible is FakeAnsible (tests/helpers/fake_ansible.py) asking the real gate."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.helpers.fake_ansible import HANG_GUARD, FakeAnsible
from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from ufcctl.cli.main import cli
from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.errors import InputError
from ufcctl.rollout import runs
from ufcctl.rollout.catalog import KINDS
from ufcctl.rollout.kind import RolloutRequest
from ufcctl.rollout.kinds import remove_nodes
from ufcctl.rollout.store import StateStore

ROOT = Path(__file__).resolve().parents[3]


def cluster(workers: int) -> Inventory:
    """cp1 (control plane, etcd core), e1 (an etcd_events member that is also a kube_node), workers."""
    ws = [f"w{i:02d}" for i in range(workers)]
    hosts = {"cp1": Host("cp1", {}, frozenset({"all", "kube_control_plane", "etcd_core", "kube_node"})),
             "e1": Host("e1", {}, frozenset({"all", "etcd_events", "kube_node"}))}
    hosts |= {n: Host(n, {}, frozenset({"all", "kube_node"})) for n in ws}
    groups = {"kube_control_plane": Group("kube_control_plane", hosts=("cp1",)),
              "etcd_core": Group("etcd_core", hosts=("cp1",)),
              "etcd_events": Group("etcd_events", hosts=("e1",)),
              "kube_node": Group("kube_node", hosts=("cp1", "e1", *ws))}
    return Inventory("inv", hosts, groups)


def request(**kw: Any) -> RolloutRequest:
    options = remove_nodes.remove_options(drain_timeout=kw.pop("drain_timeout", 900))
    return RolloutRequest(**{"inventory_dir": Path("/inv"), "batch": 2, "window": 2, "limit": "w*", **kw},
                          options=options)


@pytest.mark.parametrize("limit, named", [
    ("cp1", "cp1 (etcd_core, kube_control_plane)"),
    ("w00,e1", "e1 (etcd_events)"),
    ("kube_node", "cp1, e1 (etcd_core, etcd_events, kube_control_plane)"),
], ids=["control-plane", "etcd-member-among-workers", "whole-group"])
def test_control_planes_and_etcd_members_are_refused(limit: str, named: str) -> None:
    with pytest.raises(InputError, match="remove-nodes removes workers only") as refused:
        remove_nodes.refuse_cluster_hosts(cluster(2), limit)
    assert f"selects {named}" in refused.value.message


def test_workers_only_with_kubectl_on_the_first_control_plane(store: StateStore) -> None:
    fake = FakeAnsible()
    summary = runs.start(remove_nodes.KIND, request(limit=None, drain_timeout=120), store, cluster(3),
                         run_fn=fake)
    assert summary.status == "done" and sorted(fake.starts) == ["w00", "w01", "w02"]  # never cp1 or e1
    options = fake.calls[0][2]
    assert options.extravars == {"kube_node_remove_drain_timeout": 120}
    assert [h.name for h in options.context] == ["cp1"]
    assert summary.steps["prepare"] == "kubectl (drain, delete node) on cp1"
    assert summary.steps["drain"].startswith("in each node's play: kubectl drain on the first control plane")


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    return write_cluster_inventory(tmp_path / "inv", ClusterShape(npu_nodes=4, nodes_per_tor=4), "explicit")


def test_the_cli_refuses_a_control_plane_with_one_line_and_touches_nothing(env: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["remove-nodes", "-i", str(env), "--limit", "npu00001,cp1"])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "selects cp1 (" in errors[0] and "kube_control_plane" in errors[0]
    assert not (tmp_path / "state").exists()  # no state store, no lock, no run


def test_the_cli_runs_the_kind_on_the_workers_given(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeAnsible()
    monkeypatch.setattr("ufcctl.rollout.runs.run_playbook", fake)
    result = CliRunner().invoke(cli, ["remove-nodes", "-i", str(env), "--limit", "npu00001:npu00002",
                                      "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["kind"] == "remove-nodes" and sorted(fake.starts) == ["npu00001",
                                                                                          "npu00002"]
    assert fake.calls[0][0].startswith("remove-nodes-")


# The run killed with SIGKILL: a process of its own running the real engine with FakeAnsible. A node's
# play "cordons" it (a line in the cordon file) as it starts, as roles/kube_node tasks/remove.yml drains
# first; w00 and w01 finish, the others stay in flight until the kill.
_KILLED_CHILD = """
import sys, threading
from pathlib import Path
from tests.helpers.fake_ansible import Behaviour, FakeAnsible
from tests.unit.rollout.test_remove_nodes import cluster, request
from ufcctl.rollout import runs
from ufcctl.rollout.kinds import remove_nodes
from ufcctl.rollout.store import StateStore

cordons = Path(sys.argv[2])
hold = threading.Event()  # never set

class Progress:
    def rollout_started(self, *args): pass
    def node_started(self, host, batch): pass
    def node_finished(self, host, *args): print("finished", host, flush=True)
    def stopped(self, reason): pass

def cordon(host):
    with cordons.open("a") as fh:
        fh.write(host + "\\n")

fake = FakeAnsible({f"w{i:02d}": Behaviour(hold=hold) for i in range(2, 8)}, on_start=cordon)
runs.start(remove_nodes.KIND, request(order="plan"), StateStore(Path(sys.argv[1])), cluster(8), run_fn=fake,
           observer=Progress())
"""


def test_kill_9_then_resume_does_no_node_twice_and_leaves_none_cordoned_unrecorded(
        store: StateStore, tmp_path: Path) -> None:
    cordons = tmp_path / "cordoned"
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_CHILD, str(store.path), str(cordons)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(HANG_GUARD, proc.kill)  # a hang fails this test, not the whole run
    watchdog.start()
    try:
        assert proc.stdout is not None
        finished = {proc.stdout.readline().split()[-1] for _ in range(2)}
        assert finished == {"w00", "w01"}, proc.stderr.read() if proc.stderr else ""
        while len(cordons.read_text().split()) < 4:  # the window (2 x 2) refilled: two held in flight
            threading.Event().wait(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        watchdog.cancel()
    run_id = store.runs()[0].run_id
    states = {n.host: n.state for n in store.nodes(run_id)}
    cordoned = cordons.read_text().split()
    assert {states[h] for h in cordoned} <= {"done", "running"}  # every cordoned node has a record
    assert {h for h, s in states.items() if s == "done"} == {"w00", "w01"}
    again = FakeAnsible()
    summary = runs.resume(run_id, store, kinds=KINDS, run_fn=again, loader=lambda _p: cluster(8))
    assert summary.status == "done"
    assert again.starts == {f"w{i:02d}": 1 for i in range(2, 8)}  # the rest, each once; w00, w01 never
    assert set(cordoned) - {"w00", "w01"} <= set(again.starts)  # the killed ones were redone
