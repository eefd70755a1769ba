"""Every playbook run that changes hosts holds their node locks (engine/runner.py), re-entrant inside a use
case that holds them already; a read-only run takes none. The day-2 commands (etcd restore, member
replace, certs renew, upgrade-cluster's control-plane phase) are refused, naming the holder, while a
reset, deploy or rollout holds one of their hosts (issue 42)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.cli.test_etcd_cli import _inventory, _run, _snapshot
from ufcctl.domain.inventory.model import Host
from ufcctl.engine import runner
from ufcctl.engine.locks import NodesBusy, holding
from ufcctl.paths import playbook, state_dir

ROOT = Path(__file__).resolve().parents[3]
_HOLDER = """
import sys, time
from ufcctl.engine.locks import hold_nodes
lock = hold_nodes("reset-20261206-000000-abcdef", sys.argv[1].split(","), command="ufcctl reset -i prod")
print("held", flush=True)
time.sleep(120)
"""


@pytest.fixture
def held_m1() -> Iterator[subprocess.Popen[str]]:
    """Another ufcctl process (a reset) holds m1 in this test's state directory."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, "m1"], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    yield proc
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


@pytest.fixture
def reached(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(runner, "_run_playbook", lambda path, hosts, options, **kw: seen.append(path.name))
    return seen


HOSTS = [Host("m1", {}, frozenset({"all"})), Host("m2", {}, frozenset({"all"}))]
PLAYBOOKS = ["etcd-restore.yml", "etcd-member-replace.yml", "certs-renew.yml", "certs-renew-kubeadm.yml",
             "upgrade-cluster.yml", "reset.yml", "deploy.yml", "remove-control-plane.yml"]


@pytest.mark.parametrize("name", PLAYBOOKS)
def test_a_playbook_that_changes_hosts_is_refused_on_held_nodes(name: str, held_m1, reached) -> None:
    with pytest.raises(NodesBusy) as caught:
        runner.run_playbook(playbook(name), HOSTS, runner.RunOptions())
    assert "held by run reset-20261206-000000-abcdef" in caught.value.message
    assert f"pid {held_m1.pid}" in caught.value.message and "ufcctl reset -i prod" in caught.value.message
    assert reached == []


def test_a_read_only_run_takes_no_lock(held_m1, reached) -> None:
    runner.run_playbook(playbook("certs-check.yml"), HOSTS, runner.RunOptions(read_only=True))
    assert reached == ["certs-check.yml"]


def test_a_limit_of_names_locks_only_those(held_m1, reached) -> None:
    """A cluster phase writes every worker's vars but runs on the cluster hosts only."""
    runner.run_playbook(playbook("deploy.yml"), HOSTS, runner.RunOptions(limit="m2"))
    assert reached == ["deploy.yml"]


def test_runs_inside_a_use_case_that_holds_the_nodes_are_re_entrant(reached) -> None:
    with holding("etcd-restore-core-1", ["m1", "m2"]):
        for run_id in ("etcd-restore-x", "etcd-restore-core-1"):
            runner.run_playbook(playbook("etcd-restore.yml"), HOSTS, runner.RunOptions(), run_id=run_id)
    assert reached == ["etcd-restore.yml"] * 2
    assert list((state_dir() / "locks").glob("*.lock")) == []


def _never(what: str):
    return lambda *a, **k: pytest.fail(f"{what} while another run holds m1")


def _day2_restore(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, inv: Path) -> tuple[int, str]:
    from ufcctl.app import etcd_backup

    monkeypatch.setattr(etcd_backup, "answering", _never("probed the cluster"))
    return _run("etcd", "restore", "-i", str(inv), "--cluster", "core", "--from",
                str(_snapshot(tmp_path / "core.db")))


def _day2_member_replace(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, inv: Path) -> tuple[int, str]:
    from ufcctl.engine.etcd_client import ClusterClient

    monkeypatch.setattr(ClusterClient, "view", _never("asked the cluster"))
    return _run("etcd", "member", "replace", "-i", str(inv), "--cluster", "core", "--member", "m2")


def _day2_certs_renew(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, inv: Path) -> tuple[int, str]:
    from ufcctl.app import certs_renew

    monkeypatch.setattr(certs_renew, "etcd_status", _never("read the clusters' health"))
    monkeypatch.setattr(certs_renew, "read_certificates", _never("read the certificates"))
    return _run("certs", "renew", "-i", str(inv), "--only", "etcd", "--force")


def _day2_upgrade_control_planes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                 inv: Path) -> tuple[int, str]:
    from types import SimpleNamespace

    from ufcctl.app import upgrade_cluster

    monkeypatch.setattr(upgrade_cluster, "etcd_backup", _never("took the snapshots"))
    report = SimpleNamespace(verdict=SimpleNamespace(target="v1.35.4"))
    try:
        upgrade_cluster.upgrade_control_planes(inv, upgrade_cluster.load_inventory(inv), report,  # type: ignore[arg-type]
                                               log=lambda line: None)
    except NodesBusy as err:
        return 2, f"Error: {err.message}\nHint: {err.hint}"
    return 0, "not refused"


DAY2 = [
    # id, the command run while a reset holds m1 (each fails the test if it reads or touches anything)
    ("etcd-restore", _day2_restore),
    ("etcd-member-replace", _day2_member_replace),
    ("certs-renew", _day2_certs_renew),
    ("upgrade-cluster-control-planes", _day2_upgrade_control_planes),
]


@pytest.mark.parametrize("command", [c[1] for c in DAY2], ids=[c[0] for c in DAY2])
def test_day2_commands_hold_their_hosts_before_reading_or_touching_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held_m1, command) -> None:
    from ufcctl.app import certs_renew, etcd_backup, etcd_member, upgrade_cluster

    for module in (etcd_backup, etcd_member, certs_renew, upgrade_cluster):
        monkeypatch.setattr(module, "run_playbook", _never("a playbook ran"))
    code, out = command(monkeypatch, tmp_path, _inventory(tmp_path))
    assert code == 2, out
    assert "held by run reset-20261206-000000-abcdef" in out and f"kill {held_m1.pid}" in out
    assert "ufcctl reset -i prod" in out


def test_certs_renew_check_changes_nothing_and_takes_no_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           held_m1) -> None:
    from ufcctl.app import certs_renew
    from ufcctl.errors import InputError

    def reached(*a: object, **k: object) -> None:
        raise InputError("the plan was read")

    monkeypatch.setattr(certs_renew, "etcd_status", reached)
    code, out = _run("certs", "renew", "-i", str(_inventory(tmp_path)), "--only", "etcd", "--check")
    assert code == 2 and "the plan was read" in out, out


def test_state_dir_is_the_tests_own() -> None:
    assert "ufc-state" in str(state_dir())
