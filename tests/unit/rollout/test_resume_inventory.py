"""A rollout records its inventory (absolute path and a hash of its files); resume refuses a changed one."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers.fake_ansible import Behaviour, FakeAnsible
from tests.helpers.gen_inventory import ClusterShape, write_cluster_inventory
from tests.unit.rollout.test_upgrade_drivers import make_inventory
from ufcctl.cli.main import cli
from ufcctl.domain.inventory.model import Inventory
from ufcctl.errors import InputError
from ufcctl.rollout import runs
from ufcctl.rollout.catalog import KINDS
from ufcctl.rollout.kind import RolloutRequest
from ufcctl.rollout.kinds.upgrade_drivers import KIND, upgrade_options
from ufcctl.rollout.runs import resume
from ufcctl.rollout.store import SCHEMA_VERSION, StateStore


def _inventory_dir(root: Path) -> Path:
    inv = root / "inv"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "hosts.yml").write_text("all:\n  children:\n    npu_node:\n      hosts: {w00: {}, w01: {}}\n")
    (inv / "group_vars" / "all.yml").write_text("ufc_cluster_name: c1\n")
    (inv / "README.md").write_text("notes\n")
    return inv


def _crashed(store: StateStore, inv: Path, inventory: Inventory) -> str:
    """A run stopped by its budget: w00 failed, the rest pending."""
    request = RolloutRequest(inventory_dir=inv, batch=1, max_fail=0, options=upgrade_options())
    summary = runs.start(KIND, request, store, inventory, run_fn=FakeAnsible({"w00": Behaviour("failed")}))
    assert summary.status == "stopped", summary
    return summary.run_id


def _edit_hosts(inv: Path) -> None:
    (inv / "hosts.yml").write_text((inv / "hosts.yml").read_text().replace("w01: {}", "w01: {}, w99: {}"))


# (what happens to the inventory between the run and its resume, refused?)
CHANGES = [
    pytest.param(lambda inv: None, False, id="unchanged"),
    pytest.param(_edit_hosts, True, id="hosts-edited"),
    pytest.param(lambda inv: (inv / "group_vars" / "kube_node.yml").write_text("x: 1\n"), True,
                 id="vars-file-added"),
    pytest.param(lambda inv: (inv / "group_vars" / "all.yml").unlink(), True, id="vars-file-removed"),
    pytest.param(lambda inv: (inv / "README.md").write_text("more notes\n"), False, id="ignored-suffix"),
    pytest.param(lambda inv: (inv / ".hosts.yml.swp").write_text("x"), False, id="hidden-editor-file"),
]


@pytest.mark.parametrize(("change", "refused"), CHANGES)
def test_resume_refuses_a_changed_inventory(store: StateStore, tmp_path: Path,
                                             change: Callable[[Path], None], refused: bool) -> None:
    inv = _inventory_dir(tmp_path)
    inventory = make_inventory(4)
    run_id = _crashed(store, inv, inventory)
    change(inv)
    before = [(n.host, n.state) for n in store.nodes(run_id)]
    fake = FakeAnsible()
    if not refused:
        assert resume(run_id, store, kinds=KINDS, run_fn=fake,
                      loader=lambda _p: inventory).counts["done"] == 3
        return
    with pytest.raises(InputError) as caught:
        resume(run_id, store, kinds=KINDS, run_fn=fake, loader=lambda _p: inventory)
    assert f"run {run_id}: inventory {inv} changed since the run began" == caught.value.message
    assert "--accept-inventory-change" in (caught.value.hint or "")
    assert fake.calls == [] and [(n.host, n.state) for n in store.nodes(run_id)] == before  # untouched
    # looked at and accepted: resumed, and the accepted inventory is the run's from now on
    assert resume(run_id, store, kinds=KINDS, run_fn=fake, loader=lambda _p: inventory,
                  accept_inventory_change=True).counts["done"] == 3
    resume(run_id, store, kinds=KINDS, run_fn=FakeAnsible(), loader=lambda _p: inventory)


def test_a_relative_inventory_is_recorded_absolute_and_resumed_from_elsewhere(
    store: StateStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inv = _inventory_dir(tmp_path / "infra")
    monkeypatch.chdir(tmp_path / "infra")
    inventory = make_inventory(4)
    run_id = _crashed(store, Path("inv"), inventory)
    record = store.run(run_id)
    assert record is not None and record.inventory == str(inv)
    assert record.params["inventory_dir"] == str(inv) and record.inventory_fingerprint
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    read: list[Path] = []
    resume(run_id, store, kinds=KINDS, run_fn=FakeAnsible(), loader=lambda p: read.append(p) or inventory)
    assert read == [inv]


V1_RUNS = """CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (run_id TEXT PRIMARY KEY, kind TEXT NOT NULL, inventory TEXT NOT NULL,
    params TEXT NOT NULL, status TEXT NOT NULL, message TEXT, steps TEXT NOT NULL DEFAULT '{}',
    created REAL NOT NULL, updated REAL NOT NULL, finished REAL, pid INTEGER, hostname TEXT);
CREATE TABLE nodes (run_id TEXT NOT NULL REFERENCES runs(run_id), host TEXT NOT NULL,
    batch INTEGER NOT NULL, position INTEGER NOT NULL, state TEXT NOT NULL, reason TEXT, changed INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0, started REAL, finished REAL, ansible_run TEXT,
    PRIMARY KEY (run_id, host));
INSERT INTO meta VALUES ('schema', '1');
"""


def test_a_schema_1_store_is_migrated_and_its_runs_resume(tmp_path: Path) -> None:
    inv = _inventory_dir(tmp_path)
    path = tmp_path / "state" / "state.db"
    path.parent.mkdir()
    params = {"inventory_dir": str(inv), "batch": 1, "window": 1, "max_fail": 0.0, "canary": 0}
    with sqlite3.connect(path) as db:
        db.executescript(V1_RUNS)
        db.execute("INSERT INTO runs VALUES ('old', 'upgrade-drivers', ?, ?, 'stopped', NULL, '{}', 1, 1,"
                   " 2, NULL, NULL)", (str(inv), json.dumps(params)))
        db.execute("INSERT INTO nodes (run_id, host, batch, position, state) VALUES ('old', 'w00', 0, 0,"
                   " 'pending')")
    db.close()
    with StateStore(path) as store:
        record = store.run("old")
        assert record is not None and record.inventory_fingerprint is None
        # nothing recorded to compare with: resumed, and recorded from now on
        resumed = resume("old", store, kinds=KINDS, run_fn=FakeAnsible(), loader=lambda _p: make_inventory(2))
        assert resumed.status == "done"
        assert (store.run("old") or record).inventory_fingerprint
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == str(SCHEMA_VERSION)
    db.close()


def test_cli_resume_of_a_changed_inventory_exits_2_naming_run_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UFC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    inv = write_cluster_inventory(tmp_path / "inv", ClusterShape(npu_nodes=8, nodes_per_tor=4), "explicit")
    monkeypatch.setattr("ufcctl.rollout.runs.run_playbook",
                        FakeAnsible({"npu00001": Behaviour("failed")},
                                    marker="Report the node done to the rollout engine"))
    first = CliRunner().invoke(cli, ["upgrade-drivers", "-i", str(inv), "--batch", "2", "--max-fail", "0%"])
    assert first.exit_code == 1, first.output
    run_id = json.loads(CliRunner().invoke(cli, ["runs", "-o", "json"]).output)[0]["run_id"]
    hosts = next(inv.glob("hosts.y*ml"))
    hosts.write_text(hosts.read_text() + "\n# edited\n")
    result = CliRunner().invoke(cli, ["resume", run_id])
    assert result.exit_code == 2, result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert error == [f"Error: run {run_id}: inventory {inv} changed since the run began"]
    assert "--accept-inventory-change" in result.output
    accepted = CliRunner().invoke(cli, ["resume", run_id, "--accept-inventory-change"])
    assert accepted.exit_code in (0, 1) and "changed since" not in accepted.output
