"""`ufcctl upgrade-drivers` on a test-owned lab of 12 workers with the lab NPU emulator.

One lab for the module; the tests run in file order and each leaves every node healthy:
a full install then a run that changes nothing; injected faults (failing installer, node stopped
mid-run with `podman stop`, unhealthy chip) landing in the right states; the failure budget
stopping a run, then resume --retry-failed finishing it; kill -9 of ufcctl mid-run, then resume,
with the emulator's counters proving every node installed each package exactly once.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the emulators (lab/) are imported from the repository root
    sys.path.insert(0, str(ROOT))

from tests.helpers.lab import kill_9_when  # noqa: E402
from tests.lab_standins.npu_emulator.lab import installs, podman, stop_mirror, write_faults  # noqa: E402
from tests.lab_standins.npu_emulator.packages import RELEASES  # noqa: E402

pytestmark = pytest.mark.integration

UFCCTL = str(Path(sys.executable).parent / "ufcctl")
LAB = "itdrv"
SUBNET = "10.89.76.0/24"  # a test-owned podman network; nothing else is ever targeted
WORKERS = [f"{LAB}-w{i:02d}" for i in range(1, 13)]
V1, V2 = RELEASES
TO_V1 = ["--version", V1.driver_version, "--firmware-version", V1.firmware_version]
TO_V2 = ["--version", V2.driver_version, "--firmware-version", V2.firmware_version]


class Lab:
    def __init__(self, work: Path):
        self.work = work
        self.inventory = work / "inventory"
        self.state = work / "state"
        self.env = {
            **os.environ,
            "UFC_STATE_DIR": str(self.state),
            "UFC_LAB_NAME": LAB,
            "UFC_LAB_INVENTORY": str(self.inventory),
            "CONTAINERS_CONF": str(ROOT / "ufcctl" / "lab" / "containers.conf"),
            "KUBECONFIG": str(work / "no-kubeconfig"),  # the lab has no Kubernetes: drain is skipped
            "UFC_LAB_MONITORING": "0",  # `lab up --no-monitoring`: nothing here reads it
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    def ufcctl(self, *args: str, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
        return subprocess.run([UFCCTL, *args], env=self.env, cwd=ROOT, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def upgrade(self, *args: str) -> tuple[int, dict]:
        proc = self.ufcctl("upgrade-drivers", "--inventory", str(self.inventory), "--output", "json", *args)
        return proc.returncode, _json(proc)

    def popen_upgrade(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([UFCCTL, "upgrade-drivers", "--inventory", str(self.inventory), "--output",
                                 "json", *args], env=self.env, cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def node_states(self, run_id: str) -> dict[str, str]:
        with sqlite3.connect(self.state / "state.db") as db:
            return dict(db.execute("SELECT host, state FROM nodes WHERE run_id = ?", (run_id,)).fetchall())

    def newest_run(self) -> str | None:
        with sqlite3.connect(self.state / "state.db") as db:
            row = db.execute("SELECT run_id FROM runs ORDER BY created DESC LIMIT 1").fetchone()
        return row[0] if row else None


def _json(proc: subprocess.CompletedProcess[str]) -> dict:
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"ufcctl printed no JSON (rc={proc.returncode}):\n{proc.stdout[-3000:]}\n"
                    f"{proc.stderr[-3000:]}")


def _states(data: dict) -> dict[str, tuple[str, str | None]]:
    return {n["host"]: (n["state"], n["reason"]) for n in data["nodes"]}


def versions(worker: str) -> tuple[str, str]:
    """(driver, firmware) versions installed on the node, from the emulator's version.info files."""
    read = "sed -n 's/^Version=//p' /usr/local/Ascend/{}/version.info 2>/dev/null"
    script = f'echo "$({read.format("driver")})|$({read.format("firmware")})"'
    out = podman("exec", worker, "sh", "-c", script)
    driver, _, firmware = out.stdout.strip().partition("|")
    return driver, firmware


def _clear_faults() -> None:
    for worker in WORKERS:
        write_faults(worker, None)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if subprocess.run(["which", "podman"], capture_output=True, check=False).returncode != 0:
        pytest.skip("podman is not installed (scripts/setup.sh installs it)")
    lab = Lab(tmp_path_factory.mktemp("drvlab"))
    stop_mirror(f"{LAB}-hdk-mirror")  # a mirror of the emulator before `lab up` started it (no lab labels)
    lab.ufcctl("lab", "down")  # a lab left by an interrupted run would not start from fresh nodes
    # `lab up` alone readies the emulator: packages, the mirror, group_vars/npu_node.yml (the README's steps)
    up = lab.ufcctl("lab", "up", "--nodes", str(len(WORKERS)), "--subnet", SUBNET)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"NPU emulator: mirror {LAB}-hdk-mirror serves http://" in up.stdout, up.stdout
        yield lab
    finally:
        down = lab.ufcctl("lab", "down")  # removes the mirror with the lab
        assert down.returncode == 0, down.stdout + down.stderr


def test_full_install_then_a_second_run_changes_nothing(lab: Lab) -> None:
    rc, first = lab.upgrade("--batch", "4", "--window", "2")
    assert rc == 0, _states(first)
    assert first["counts"]["done"] == 12 and first["changed"] == 12
    assert first["steps"]["drain"].startswith("skipped: no kubeconfig")
    for worker in WORKERS:  # fresh install order: driver, then firmware
        assert installs(worker) == [("driver", V1.driver_version, "full"),
                                    ("firmware", V1.firmware_version, "full")], worker
    rc, second = lab.upgrade("--batch", "4", "--window", "2")
    assert rc == 0 and second["counts"]["done"] == 12
    assert second["changed"] == 0, [n["host"] for n in second["nodes"] if n["changed"]]
    assert all(len(installs(w)) == 2 for w in WORKERS)
    runs = json.loads(lab.ufcctl("runs", "--output", "json").stdout)
    assert [r["run_id"] for r in runs[:2]] == [second["run_id"], first["run_id"]]


def _stop_when_installing(worker: str, version: str, stopped: threading.Event) -> None:
    """Stop the container once its driver installer started (the emulator logs the start)."""
    for _ in range(900):
        log = podman("exec", worker, "cat", "/var/log/ascend_seclog/ascend_install.log", check=False).stdout
        if f"start driver {version}" in log:
            podman("stop", "-t", "2", worker, check=False)
            stopped.set()
            return
        time.sleep(1)


def test_faults_land_in_the_right_states(lab: Lab) -> None:
    failing, unhealthy, stopped_node = WORKERS[2], WORKERS[4], WORKERS[7]
    write_faults(failing, {"fail": "firmware"})
    write_faults(unhealthy, {"unhealthy_chips": [3]})
    write_faults(stopped_node, {"driver_seconds": 120})  # long enough to be stopped mid-install
    stopped = threading.Event()
    watcher = threading.Thread(target=_stop_when_installing, args=(stopped_node, V2.driver_version, stopped))
    watcher.start()
    try:
        # 3 failures can come first (3 of max(3, batch 4) = 75%): a budget that never stops this run
        rc, data = lab.upgrade("--batch", "4", "--window", "2", "--max-fail", "75%", *TO_V2)
    finally:
        watcher.join()
        lab.ufcctl("lab", "up")  # starts the stopped container again, keeps the emulator's group_vars
        _clear_faults()
    assert stopped.is_set()
    assert (lab.inventory / "group_vars" / "npu_node.yml").is_file()  # the `lab up` above kept it
    states = _states(data)
    assert rc == 1 and data["status"] == "failed", (data["status"], data["message"], states)
    assert states[failing][0] == "failed" and "fault injected" in states[failing][1]
    assert states[unhealthy][0] == "failed"
    assert "health gate: chips not OK: 3 Critical" in states[unhealthy][1]
    assert states[stopped_node][0] == "failed"
    assert sorted(h for h, (s, _) in states.items() if s == "done") == sorted(
        set(WORKERS) - {failing, unhealthy, stopped_node})
    assert versions(failing) == (V1.driver_version, V1.firmware_version)  # firmware goes first; it failed
    for worker in set(WORKERS) - {failing, unhealthy, stopped_node}:  # upgrade order: firmware, driver
        assert installs(worker)[-2:] == [("firmware", V2.firmware_version, "upgrade"),
                                         ("driver", V2.driver_version, "upgrade")], worker


def test_budget_stops_the_run_and_resume_finishes_it(lab: Lab) -> None:
    before = {w: len(installs(w)) for w in WORKERS}
    for worker in WORKERS[:2]:
        write_faults(worker, {"fail": "firmware"})
    # --order plan: the faulty nodes come first in the start order (the default, longest expected
    # first, would order by what earlier tests recorded). Which of the first window's hosts reach
    # the gate first is up to Ansible's forks, so the test asserts states, not exact positions.
    rc, data = lab.upgrade("--batch", "4", "--max-fail", "10%", "--order", "plan", *TO_V1)
    states = _states(data)
    assert rc == 1 and data["status"] == "stopped", (data["status"], data["message"], states)
    assert "exceeds --max-fail 10%" in data["message"]
    failed = {h: r for h, (s, r) in states.items() if s == "failed"}
    assert failed and set(failed) <= set(WORKERS[:2]), states
    assert all("fault injected" in r for r in failed.values()), failed
    assert not [w for w in WORKERS[:2] if states[w][0] == "done"], states  # a faulty node never passes
    pending = [h for h, (s, _) in states.items() if s == "pending"]
    assert pending and WORKERS[-1] in pending, states  # the stop came before the end of the start order
    for worker in pending:  # never started: nothing installed
        assert len(installs(worker)) == before[worker]
    assert not [h for h, (s, _) in states.items() if s == "running"]  # in-flight work finished
    _clear_faults()
    proc = lab.ufcctl("resume", data["run_id"], "--retry-failed", "--output", "json")
    resumed = _json(proc)
    assert proc.returncode == 0, _states(resumed)
    assert resumed["counts"]["done"] == 12
    for worker in WORKERS:
        assert versions(worker) == (V1.driver_version, V1.firmware_version), worker


def _install_log(worker: str) -> list[str]:
    log = podman("exec", worker, "cat", "/var/log/ascend_seclog/ascend_install.log", check=False)
    return log.stdout.splitlines()


def _installing(states: dict[str, str], seen: dict[str, int]) -> bool:
    """A running node whose emulated driver installer has started in this run and not finished.
    Only the log lines after `seen` count: earlier tests left V2 installs (and, on the node stopped
    mid-install, a start without its done) in the log."""
    for host, state in states.items():
        if state != "running":
            continue
        log = "\n".join(_install_log(host)[seen[host]:])
        if f" start driver {V2.driver_version}" in log and f" done driver {V2.driver_version}" not in log:
            return True
    return False


def test_kill_9_mid_run_then_resume_installs_every_node_exactly_once(lab: Lab) -> None:
    # Whatever ran before (V1 installed, or a fresh lab when run alone), every node takes V2 once.
    before = {w: len(installs(w)) for w in WORKERS}
    seen = {w: len(_install_log(w)) for w in WORKERS}
    for worker in WORKERS:
        write_faults(worker, {"driver_seconds": 8})
    earlier = lab.newest_run() if (lab.state / "state.db").exists() else None
    proc = lab.popen_upgrade("--batch", "4", *TO_V2)
    run_id = None

    def midway() -> bool:  # some nodes are done and others in the middle of an install
        nonlocal run_id
        newest = lab.newest_run() if (lab.state / "state.db").exists() else None
        run_id = run_id or (newest if newest != earlier else None)
        states = lab.node_states(run_id) if run_id else {}
        return list(states.values()).count("done") >= 4 and _installing(states, seen)

    kill_9_when(proc, midway, "nodes both done and running")
    states = lab.node_states(run_id)
    assert "running" in states.values() and "done" in states.values()
    resumed = lab.ufcctl("resume", run_id, "--output", "json")
    data = _json(resumed)
    _clear_faults()
    assert resumed.returncode == 0, (data.get("message"), _states(data), resumed.stderr[-2000:])
    assert data["counts"]["done"] == 12
    for worker in WORKERS:
        new = sorted(entry[:2] for entry in installs(worker)[before[worker]:])
        assert new == [("driver", V2.driver_version), ("firmware", V2.firmware_version)], (worker, new)
        assert versions(worker) == (V2.driver_version, V2.firmware_version), worker
