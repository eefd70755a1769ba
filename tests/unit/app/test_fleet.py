"""app/fleet.py, the fleet commands' one front door: the inventory read once and fingerprinted at that
read, the kind's version guard before the state store opens, and a guard already passed not run again."""

from __future__ import annotations

from pathlib import Path

import pytest

from ufcctl.app import fleet
from ufcctl.engine.inventory_files import fingerprint
from ufcctl.errors import InputError
from ufcctl.rollout.kind import RolloutKind, RolloutRequest

SAMPLE = Path(__file__).resolve().parents[3] / "inventories" / "sample"


def _kind(guard: bool) -> RolloutKind:
    return RolloutKind("k", "k.yml", "done", "kube_node", version_guard=guard)


def test_load_takes_the_fingerprint_of_the_files_it_read() -> None:
    loaded = fleet.load(SAMPLE)
    assert loaded.fingerprint == fingerprint(SAMPLE) and "cp1" in loaded.inventory.hosts
    assert not loaded.guarded


@pytest.mark.parametrize(("guard", "guarded", "refused"), [
    (True, False, True), (True, True, False), (False, False, False),
])
def test_the_version_guard_runs_when_the_kind_asks_before_the_store_opens(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, guard: bool, guarded: bool, refused: bool) -> None:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))

    def refuse(inventory_dir: Path, inventory: object) -> None:
        raise InputError("version changed")

    seen: dict[str, object] = {}
    monkeypatch.setattr(fleet, "refuse_version_change", refuse)
    monkeypatch.setattr(fleet.runs, "start", lambda kind, request, store, inventory, **kw: seen.update(kw))
    loaded = fleet.load(SAMPLE, guarded=guarded)
    request = RolloutRequest(SAMPLE, batch=2)
    if refused:
        with pytest.raises(InputError, match="version changed"):
            fleet.start(_kind(guard), request, inventory=loaded)
        assert not (tmp_path / "state").exists()  # refused before the state store was opened
    else:
        fleet.start(_kind(guard), request, inventory=loaded)
        assert seen["inventory_fingerprint"] == loaded.fingerprint
