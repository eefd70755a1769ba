"""`ufcctl deploy` flags: unknown tags exit 2 before anything runs; a run that ran nothing exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ufcctl.cli.main import cli
from ufcctl.engine.run_result import HostResult, RunResult

SAMPLE = Path(__file__).resolve().parents[3] / "inventories" / "sample"


class FakeEngine:
    """run_playbook stand-in: every host reports `ran` tasks."""

    def __init__(self, ran: int):
        self.ran = ran
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, playbook, hosts, options, *, run_id=None, observer=None):  # type: ignore[no-untyped-def]
        self.calls.append(options.tags)
        results = {h.name: HostResult(h.name, ok=self.ran, ran=self.ran) for h in hosts}
        return RunResult(run_id, playbook.name, "successful", 0, results, Path("/x"), 0.1)


@pytest.fixture()
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "ufc"))
    return tmp_path / "ufc"


@pytest.mark.parametrize(
    ("flag", "value", "unknown"),
    [
        pytest.param("--tags", "nfs,addon", "--tags addon", id="tags-typo"),
        pytest.param("--skip-tags", "volcanoo", "--skip-tags volcanoo", id="skip-tags-typo"),
        pytest.param("--tags", "nope,nada", "--tags nope, nada", id="two-unknown"),
    ],
)
def test_unknown_tag_exits_2_listing_known_tags(state: Path, monkeypatch: pytest.MonkeyPatch, flag: str,
                                                value: str, unknown: str) -> None:
    engine = FakeEngine(ran=1)
    monkeypatch.setattr("ufcctl.app.deploy.run_playbook", engine)
    result = CliRunner().invoke(cli, ["deploy", "-i", str(SAMPLE), flag, value])
    assert result.exit_code == 2, result.output
    assert f"Error: {unknown}: no play, role or task of deploy.yml has" in result.output
    assert "Hint: known tags: addons, apiserver_lb, ascend_components" in result.output
    assert "Ansible's own: all, always, never, tagged, untagged" in result.output
    assert engine.calls == [] and not (state / "runs").exists()


@pytest.mark.parametrize("tags", ["nfs", "always", "never,addons", "tagged", "untagged", "all"])
def test_known_and_special_tags_are_accepted(state: Path, monkeypatch: pytest.MonkeyPatch, tags: str) -> None:
    engine = FakeEngine(ran=1)
    monkeypatch.setattr("ufcctl.app.deploy.run_playbook", engine)
    result = CliRunner().invoke(cli, ["deploy", "-i", str(SAMPLE), "--tags", tags, "--limit", "cp1"])
    assert result.exit_code == 0, result.output
    assert engine.calls == [tuple(tags.split(","))]


def test_a_run_in_which_nothing_ran_exits_2(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ufcctl.app.deploy.run_playbook", FakeEngine(ran=0))
    result = CliRunner().invoke(cli, ["deploy", "-i", str(SAMPLE), "--tags", "nfs_server", "--limit", "cp1"])
    assert result.exit_code == 2, result.output
    assert "deploy.yml: nothing ran" in result.output
    assert ("Error: deploy ran no task on any of its 1 host(s) (--tags nfs_server; --limit cp1): "
            "nothing was deployed") in result.output
    assert "Hint: " in result.output


def test_workers_with_cluster_tags_run_nothing_and_exit_2(state: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """npu001 is only a worker: no cluster phase; --tags select cluster-phase tasks: no node phase."""
    monkeypatch.setattr("ufcctl.app.deploy.run_playbook", FakeEngine(ran=1))
    result = CliRunner().invoke(cli, ["deploy", "-i", str(SAMPLE), "--tags", "preflight",
                                      "--limit", "npu001"])
    assert result.exit_code == 2, result.output
    assert "Error: deploy ran nothing (--tags preflight; --limit npu001): cluster phase: the selection " \
           "holds no cluster host; node phase: --tags/--skip-tags select tasks of the cluster phase only" \
           in result.output.replace("\n", " ")


class SkippingEngine(FakeEngine):
    """run_playbook stand-in whose roles report one step SKIPPED on the first host (as k8s_manifests
    does without kubectl on the apply host)."""

    def __call__(self, playbook, hosts, options, *, run_id=None, observer=None):  # type: ignore[no-untyped-def]
        result = super().__call__(playbook, hosts, options, run_id=run_id, observer=observer)
        result.skipped_steps = [{"host": h.name, "task": "Render, validate and apply the Calico objects",
                                 "message": f"cni: apply SKIPPED on {h.name} (kubectl not found in PATH)"}
                                for h in hosts[:1]]
        return result


@pytest.mark.parametrize(
    ("extra", "lab", "code"),
    [
        pytest.param([], False, 1, id="production-skip-fails"),
        pytest.param(["--allow-skips"], False, 0, id="allowed"),
        pytest.param([], True, 0, id="lab-inventory"),
        pytest.param(["--check"], False, 0, id="check-mode-lists-only"),
    ],
)
def test_a_deploy_that_skipped_a_needed_step_lists_it_and_fails_unless_allowed(
        state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str], lab: bool,
        code: int) -> None:
    import shutil

    inventory = tmp_path / "prod"
    shutil.copytree(SAMPLE, inventory)
    if lab:
        (inventory / ".ufcctl-lab").write_text("ufc\n")
    monkeypatch.setattr("ufcctl.app.deploy.run_playbook", SkippingEngine(ran=1))
    result = CliRunner().invoke(cli, ["deploy", "-i", str(inventory), "--limit", "cp1", *extra])
    assert result.exit_code == code, result.output
    assert "SKIPPED steps (1): a production cluster needs each of them" in result.output
    assert "cp1: Render, validate and apply the Calico objects: cni: apply SKIPPED on cp1" in result.output
    if code:
        assert "Error: deploy skipped 1 step(s) a production cluster needs" in result.output
        assert "--allow-skips" in result.output


def test_lab_marker_is_the_one_lab_up_writes() -> None:
    from ufcctl.app.deploy import LAB_MARKER
    from ufcctl.lab.inventory import MARKER

    assert LAB_MARKER == MARKER
