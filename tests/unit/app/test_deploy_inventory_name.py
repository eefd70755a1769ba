"""deploy passes the inventory's name to the roles (k8s_manifests writes .ufc/manifests/<name>/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ufcctl.app import deploy as deploy_app
from ufcctl.engine.runner import RunOptions

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
    monkeypatch.setattr(
        deploy_app,
        "run_playbook",
        lambda pb, hosts, options, run_id=None, observer=None: seen.update(options=options) or "result",
    )
    assert deploy_app.deploy(SAMPLE, RunOptions(extravars=extravars), limit="cp1") == "result"
    assert seen["options"].extravars["ufc_inventory_name"] == expected
