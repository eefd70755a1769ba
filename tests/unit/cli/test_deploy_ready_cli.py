"""`ufcctl deploy`'s readiness wait (D19): after the last phase run, every Node Ready and every add-on
workload available through the API, or exit 1 naming what is not; never in --check or --phase cluster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers.fake_api import FakeApi, cluster
from ufcctl.app.readiness import wait_ready
from ufcctl.cli.main import cli
from ufcctl.engine.run_result import HostResult, RunResult

SAMPLE = Path(__file__).resolve().parents[3] / "inventories" / "sample"
# no worker selected: the cluster phase is the last phase run
CLUSTER_ONLY = ["deploy", "-i", str(SAMPLE), "--limit", "cp1"]


def engine(playbook, hosts, options, *, run_id=None, observer=None):  # type: ignore[no-untyped-def]
    results = {h.name: HostResult(h.name, ok=1, ran=1) for h in hosts}
    return RunResult(run_id, playbook.name, "successful", 0, results, Path("/x"), 0.1)


@pytest.fixture()
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "ufc"))
    monkeypatch.setattr("ufcctl.app.deploy.run_playbook", engine)
    clock = [0.0]  # a fake monotonic clock: each read takes 7 s, each sleep its length

    def fake_wait(*args, **kwargs):  # type: ignore[no-untyped-def]
        def now() -> float:
            clock[0] += 7
            return clock[0]
        return wait_ready(*args, **kwargs, clock=now, sleep=lambda s: clock.__setitem__(0, clock[0] + s))
    monkeypatch.setattr("ufcctl.app.deploy.wait_ready", fake_wait)
    fake = FakeApi()
    monkeypatch.setattr("ufcctl.app.deploy.api_client", fake.client)
    return fake


def test_a_ready_cluster_ends_the_deploy_with_one_line(api: FakeApi) -> None:
    api.states = [cluster(not_ready=1), cluster()]
    result = CliRunner().invoke(cli, CLUSTER_ONLY)
    assert result.exit_code == 0, result.output
    assert ("cluster ready: 3 Node(s) Ready, 3 workload(s) available (read through /kc/admin.conf"
            in result.output)
    assert "s): 1 of 3 Node(s) NotReady: node2\n" in result.output  # "waiting for the cluster (N s): ..."
    assert api.reads == 2


def test_time_running_out_exits_1_naming_the_first_few_and_counting_the_rest(api: FakeApi) -> None:
    api.states = [cluster(nodes=12, not_ready=8, unavailable=3)]
    result = CliRunner().invoke(cli, [*CLUSTER_ONLY, "--ready-timeout", "60"])
    assert result.exit_code == 1, result.output
    error = next(line for line in result.output.splitlines() if line.startswith("Error: "))
    assert error.startswith("Error: cluster not ready after ")
    assert ("8 of 12 Node(s) NotReady: node10, node11, node4, node5, node6 and 3 more; 3 of 3 workload(s) "
            "unavailable: kube-system/DaemonSet/calico-node ready 11/12, "
            "nfs-system/Deployment/nfs-provisioner ready 0/1, "
            "volcano-system/Deployment/volcano-scheduler ready 0/1") in error
    assert "--ready-timeout" in result.output  # the hint
    assert api.reads == 2  # fake clock: 7 s per look, 10 s per sleep; a third read would end past 60 s


def test_json_carries_the_last_read(api: FakeApi) -> None:
    api.states = [cluster(not_ready=1)]
    result = CliRunner().invoke(cli, [*CLUSTER_ONLY, "--ready-timeout", "1", "-o", "json"])
    assert result.exit_code == 1
    ready = json.loads(result.stdout)["ready"]
    assert ready["ok"] is False and ready["kubeconfig"] == "/kc/admin.conf"
    assert ready["readiness"]["not_ready"] == ["node2"]


@pytest.mark.parametrize(("extra", "note"), [
    pytest.param(["--check"], "readiness wait: not in check mode", id="check-never-waits"),
    pytest.param(["--phase", "cluster"], "readiness wait: not after --phase cluster alone",
                 id="phase-cluster"),
    pytest.param(["--ready-timeout", "0"], "readiness wait: --ready-timeout 0", id="timeout-0"),
])
def test_no_wait_in_check_mode_after_phase_cluster_or_with_timeout_0(api: FakeApi, extra: list[str],
                                                                     note: str) -> None:
    api.states = ["never asked"]
    result = CliRunner().invoke(cli, [*CLUSTER_ONLY, *extra])
    assert result.exit_code == 0, result.output
    assert f"skipped: {note}" in result.output
    assert api.calls == []


def test_without_a_kubeconfig_the_deploy_says_it_did_not_check(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "ufc"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.setattr("ufcctl.app.deploy.run_playbook", engine)
    result = CliRunner().invoke(cli, CLUSTER_ONLY)
    assert result.exit_code == 0, result.output
    assert ("skipped: readiness wait: no kubeconfig (KUBECONFIG unset or missing, no ~/.kube/config): the "
            "cluster's Nodes and workloads were not read; set KUBECONFIG") in result.output.replace("\n", " ")
