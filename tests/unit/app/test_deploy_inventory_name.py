"""deploy passes the inventory's name to the roles (k8s_manifests writes .ufc/manifests/<name>/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ufcctl.app import deploy as deploy_app
from ufcctl.engine.run_result import RunResult
from ufcctl.engine.runner import RunOptions
from ufcctl.rollout.kind import RolloutRequest

SAMPLE = Path(__file__).resolve().parents[3] / "inventories" / "sample"


@pytest.mark.parametrize(
    ("extravars", "expected"),
    [
        pytest.param({}, "sample", id="from-directory"),
        pytest.param({"ufc_inventory_name": "prod-a"}, "prod-a", id="explicit-wins"),
    ],
)
def test_inventory_name_reaches_the_playbook(monkeypatch, tmp_path: Path, extravars: dict,
                                             expected: str) -> None:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path))  # deploy locks its hosts under the state directory
    seen = {}
    done = RunResult("r", "deploy.yml", "successful", 0, {}, tmp_path, 0.1)
    monkeypatch.setattr(
        deploy_app,
        "run_playbook",
        lambda pb, hosts, options, run_id=None, observer=None: seen.update(options=options) or done,
    )
    assert deploy_app.deploy(SAMPLE, RunOptions(extravars=extravars), limit="cp1").cluster is done
    assert seen["options"].extravars["ufc_inventory_name"] == expected


def test_deploy_runs_the_cluster_phase_on_cluster_hosts_then_the_workers_on_the_engine(
        monkeypatch, tmp_path: Path) -> None:
    """The sample's 16 workers never reach deploy.yml's plays (Ansible's --limit keeps them vars-only,
    for the add-ons' ToR map); the node phase gets the fleet settings and the same --limit."""
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path))
    seen: dict = {}

    def cluster(pb, hosts, options, run_id=None, observer=None):  # type: ignore[no-untyped-def]
        seen.update(hosts=[h.name for h in hosts], limit=options.limit)
        return RunResult("r", pb.name, "successful", 0, {}, tmp_path, 0.1)

    monkeypatch.setattr(deploy_app, "run_playbook", cluster)
    monkeypatch.setattr(deploy_app.fleet.runs, "start",
                        lambda kind, req, store, inventory, **kw: seen.update(request=req) or "nodes")
    result = deploy_app.deploy(SAMPLE, RunOptions(), nodes=RolloutRequest(SAMPLE, batch=8, rate=5.0),
                               store=object(), ready_timeout=0)
    contacted = seen["limit"].split(",")
    assert "npu001" in seen["hosts"] and "npu001" not in contacted and "cp1" in contacted
    assert result.nodes == "nodes" and seen["request"].batch == 8 and seen["request"].rate == 5.0
    assert seen["request"].limit is None and result.skipped == ["readiness wait: --ready-timeout 0"]


def test_a_failed_cluster_phase_starts_no_worker(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(deploy_app, "run_playbook",
                        lambda pb, hosts, options, run_id=None, observer=None:
                        RunResult("r", pb.name, "failed", 2, {}, tmp_path, 0.1))
    monkeypatch.setattr(deploy_app.fleet.runs, "start",
                        lambda *a, **kw: pytest.fail("the node phase must not start"))
    result = deploy_app.deploy(SAMPLE, RunOptions(), nodes=RolloutRequest(SAMPLE, batch=8), store=object())
    assert result.nodes is None and result.skipped == ["node phase: not started, the cluster phase failed"]
