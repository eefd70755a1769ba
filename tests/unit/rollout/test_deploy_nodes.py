"""The deploy-nodes kind (node phase of deploy, add-nodes): targets, join pacing, the once-per-run join
token step, and resume. Ansible is FakeAnsible (tests/helpers/fake_ansible.py) asking the real gate."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fake_ansible import FakeAnsible
from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.engine.run_result import HostResult, RunResult
from ufcctl.errors import RunFailed
from ufcctl.rollout import runs
from ufcctl.rollout.catalog import KINDS
from ufcctl.rollout.kind import RolloutRequest
from ufcctl.rollout.kinds import deploy_nodes
from ufcctl.rollout.store import StateStore


def cluster(workers: int, control_planes: int = 1) -> Inventory:
    cps = [f"cp{i}" for i in range(1, control_planes + 1)]
    ws = [f"w{i:02d}" for i in range(workers)]
    hosts = {n: Host(n, {}, frozenset({"all", "kube_control_plane", "kube_node"})) for n in cps}
    hosts |= {n: Host(n, {}, frozenset({"all", "kube_node"})) for n in ws}
    groups = {"kube_control_plane": Group("kube_control_plane", hosts=tuple(cps)),
              "kube_node": Group("kube_node", hosts=(*cps, *ws))}
    return Inventory("inv", hosts, groups)


def request(**kw: Any) -> RolloutRequest:
    own = {k: kw.pop(k) for k in ("node_timeout",) if k in kw}
    return RolloutRequest(**{"inventory_dir": Path("/inv"), "batch": 2, "window": 4, **kw},
                          options=deploy_nodes.nodes_options(**own))


@pytest.fixture()
def tokens(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The join-token play: records the hosts it was run on, succeeds."""
    calls: list[list[str]] = []

    def run(playbook: Path, hosts: list[Host], options: Any, **kw: Any) -> RunResult:
        calls.append([playbook.name, *(h.name for h in hosts)])
        results = {h.name: HostResult(h.name, ok=1, ran=1) for h in hosts}
        return RunResult("t", playbook.name, "successful", 0, results, Path("/x"), 0.1)

    monkeypatch.setattr(deploy_nodes, "run_playbook", run)
    return calls


def test_control_planes_are_never_joined_as_workers_and_the_token_is_made_once(
        store: StateStore, tokens: list[list[str]]) -> None:
    inv = cluster(5)
    fake = FakeAnsible()
    summary = runs.start(deploy_nodes.KIND, request(), store, inv, run_fn=fake)
    assert summary.status == "done" and sorted(fake.starts) == [f"w{i:02d}" for i in range(5)]
    assert tokens == [["join-token.yml", "cp1"]]  # only the first control plane, once
    assert summary.steps["prepare"] == "join token from cp1: ok"
    assert summary.steps["drain"].startswith("in each node's play, only where a joined worker")
    assert fake.calls[0][2].extravars == {}
    # every chunk's inventory carries the cluster's hosts beside its workers (never run on them): the
    # NFS client, node exporter and NPU taint removal read groups the chunk alone would not have
    assert [h.name for h in fake.calls[0][2].context] == ["cp1"]


def test_admissions_are_paced_to_the_join_rate(store: StateStore, tokens: list[list[str]]) -> None:
    inv = cluster(6)
    fake = FakeAnsible()
    summary = runs.start(deploy_nodes.KIND, request(rate=20.0, batch=6, window=1), store, inv, run_fn=fake)
    assert summary.status == "done"
    started = sorted(n.started for n in store.nodes(summary.run_id) if n.started is not None)
    assert len(started) == 6
    # all six were at the gate with six free slots: only the pacer spaced them (a slow machine can
    # only widen the gaps, never narrow them)
    gaps = [b - a for a, b in zip(started, started[1:], strict=False)]
    assert min(gaps) >= 1 / 20.0 - 0.005, gaps


def test_without_a_rate_nothing_is_held_back(store: StateStore, tokens: list[list[str]]) -> None:
    summary = runs.start(deploy_nodes.KIND, request(rate=None), store, cluster(4), run_fn=FakeAnsible())
    assert summary.status == "done" and store.run(summary.run_id).params["rate"] is None


def test_a_failed_token_step_touches_no_worker_and_resume_asks_again(
        store: StateStore, monkeypatch: pytest.MonkeyPatch) -> None:
    inv = cluster(3)
    outcomes = ["failed", "successful"]
    calls: list[str] = []

    def run(playbook: Path, hosts: list[Host], options: Any, **kw: Any) -> RunResult:
        status = outcomes.pop(0)
        calls.append(status)
        ok = status == "successful"
        result = HostResult("cp1", ok=1, ran=1, failed=0 if ok else 1,
                            message=None if ok else "kubeadm token create: connection refused")
        return RunResult("t", playbook.name, status, 0 if ok else 2, {"cp1": result}, Path("/x"), 0.1)

    monkeypatch.setattr(deploy_nodes, "run_playbook", run)
    fake = FakeAnsible()
    with pytest.raises(RunFailed, match="join token on cp1: failed: kubeadm token create: connection"):
        runs.start(deploy_nodes.KIND, request(), store, inv, run_fn=fake)
    assert fake.calls == []  # no worker's process was started
    record = store.runs("deploy-nodes")[0]
    assert record.status == "failed" and "before any node" in (record.message or "")
    resumed = runs.resume(record.run_id, store, kinds=KINDS, run_fn=fake, loader=lambda _p: inv)
    assert resumed.status == "done" and calls == ["failed", "successful"]
    assert sorted(fake.starts) == ["w00", "w01", "w02"]


def test_no_control_plane_means_no_token_and_says_so(store: StateStore) -> None:
    inv = cluster(2, control_planes=0)
    inv = dataclasses.replace(inv, groups={"kube_node": inv.groups["kube_node"]})
    summary = runs.start(deploy_nodes.KIND, request(), store, inv, run_fn=FakeAnsible())
    assert summary.status == "done"
    assert summary.steps["prepare"].startswith("no join token: group kube_control_plane has no hosts")


def test_the_registry_cache_index_is_computed_once_for_the_fleet(store: StateStore,
                                                                 tokens: list[list[str]]) -> None:
    inv = cluster(3)
    cache = Host("cache1", {"ansible_host": "10.0.0.9", "registry_cache_tier": "tor", "npu_tor_id": 4},
                 frozenset({"all", "registry_cache"}))
    groups = {**inv.groups, "registry_cache": Group("registry_cache", hosts=("cache1",))}
    inv = dataclasses.replace(inv, hosts={**inv.hosts, "cache1": cache}, groups=groups)
    fake = FakeAnsible()
    summary = runs.start(deploy_nodes.KIND, request(), store, inv, run_fn=fake)
    assert summary.status == "done"
    options = fake.calls[0][2]
    assert options.extravars == {"registry_cache_index": {"tor/4": ["10.0.0.9"]}}
    assert [h.name for h in options.context] == ["cp1", "cache1"]


def test_steps_a_node_reported_skipped_are_recorded_per_task(
        store: StateStore, tokens: list[list[str]]) -> None:
    """No silent success: the node phase keeps, per task, how many nodes reported a step SKIPPED and one
    example, in the run's steps (app/deploy.py lists them and fails a production deploy)."""
    from tests.helpers.fake_ansible import SKIP_TASK, Behaviour

    inv = cluster(4)
    skip = "kubeadm join SKIPPED on w01: no valid join token"
    fake = FakeAnsible({"w01": Behaviour(skipped=skip), "w03": Behaviour(skipped=skip)})
    summary = runs.start(deploy_nodes.KIND, request(), store, inv, run_fn=fake)
    assert summary.status == "done"
    step = summary.steps[f"SKIPPED: {SKIP_TASK}"]
    assert step.startswith("2 node(s); e.g. w0") and skip in step
    assert [k for k in summary.steps if k.startswith("SKIPPED")] == [f"SKIPPED: {SKIP_TASK}"]
