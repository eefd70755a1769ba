"""NPU fabric bring-up and tiered admission (issue 30) on the shared deployed lab, with the README's lines as
written (section "NPU fabric on the lab").

The lab's NPU workers have a fabric plan (`ufcctl lab up` writes `npu_fabric_subnet` per ToR beside
`npu_slice_id`) and an emulated wiring that matches it (each worker's /etc/ufc-npu-emulator/wiring.json:
the LLDP neighbour of every chip); the emulated driver installs the LAB NPU EMULATOR's hccn_tool.
The README's main job installs no driver, so the workers join tainted and stay so.

Checked, in one pass over the six workers (faults are injected per node, one kind each):
- `ufcctl upgrade-drivers ... --max-fail 100%` installs the driver everywhere, writes every chip's device
  IP and /etc/hccn.conf from the plan, runs tier 1 and admits the healthy nodes; it exits 1, and each
  faulty node (a chip's link down, its net health failing, a miscabled chip, a duplicate device IP) keeps
  the NPU health taint, is cordoned with ufcctl's mark, carries the reason in the annotation
  ufcctl.io/npu-fabric, and the run's record names the chip and the fault;
- the faults repaired, the same line admits them: exit 0, no taint, no hold left;
- with the lab's kubeconfig (the engine cordons and drains): the same line again drains nothing (no worker
  cordoned, no probe pod evicted: every Node's labels say the target); a new version drains the node first;
  labels at the target on a node that is not (a reimaged node's) make its play drain it, then install;
- `ufcctl npu check --inventory lab` on the healthy fleet exits 0 and changes nothing (the run's nodes
  unchanged, hccn_tool's state and /etc/hccn.conf untouched, the Nodes as they were); a link taken down
  afterwards makes it exit 1 naming the node and chip;
- `ufcctl npu check --inventory lab --deep` exits 0 with every node's pings (8 pairs: chip i to chip i
  of its ToR peer).

The lab is left as found: the driver, hccn_tool's state, hccn.conf, the admission record and the fault
files are removed again, and the taint is put back (teardown, also after a failure). Wall time and node
times are printed. A stack module (tests/helpers/lab.py STACK_MODULES).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.lab import ROOT, STACK_LAB, Stack
from tests.helpers.npu_lab import (
    HCCN_STATE,
    HOLD,
    KUBECTL,
    MARK,
    TAINT,
    CordonWatch,
    driverless,
    movable_pods,
    probe_pods,
    restore,
)
from tests.lab_standins.npu_emulator.lab import set_installed, write_faults
from tests.lab_standins.npu_emulator.packages import RELEASES
from ufcctl.app.inventory import load_inventory
from ufcctl.domain.npu.fabric_plan import host_plan
from ufcctl.rollout.store import StateStore

pytestmark = pytest.mark.integration

WORKERS = [f"{STACK_LAB}-w0{i}" for i in range(1, 7)]
CP1 = f"{STACK_LAB}-cp1"
WIRING = "/etc/ufc-npu-emulator/wiring.json"


def readme_line(start: str) -> str:
    """The README's first line starting with `start`, as written (its comment cut)."""
    for line in (ROOT / "README.md").read_text().splitlines():
        words = line.split("#", 1)[0].strip()
        if words.startswith(start):
            return words
    raise AssertionError(f"README.md has no `{start} ...` line")


UPGRADE = readme_line("ufcctl upgrade-drivers --inventory lab --batch 6 --max-fail 100%")
CHECK = readme_line("ufcctl npu check --inventory lab")
DEEP = readme_line("ufcctl npu check --inventory lab --deep")


def _shell(stack: Stack, line: str) -> subprocess.CompletedProcess[str]:
    t0 = time.monotonic()
    proc = subprocess.run(["bash", "-c", line], cwd=ROOT, env=stack.env, capture_output=True, text=True,
                          timeout=900, check=False)
    print(f"{line}: rc {proc.returncode}, {time.monotonic() - t0:.1f} s")
    return proc


def _exec(host: str, *argv: str, check: bool = True) -> str:
    proc = subprocess.run(["podman", "exec", host, *argv], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0 or not check, (host, argv, proc.stderr)
    return proc.stdout


def _nodes() -> dict[str, dict[str, Any]]:
    items = json.loads(_exec(CP1, *KUBECTL, "get", "nodes", "-o", "json"))["items"]
    return {n["metadata"]["name"]: n for n in items if n["metadata"]["name"] in WORKERS}


def _state(node: dict[str, Any]) -> tuple[bool, bool, str | None, str | None]:
    """(tainted, cordoned, hold reason, cordon mark) of a Node."""
    taints = {t["key"] for t in node["spec"].get("taints") or []}
    notes = node["metadata"].get("annotations") or {}
    return TAINT in taints, bool(node["spec"].get("unschedulable")), notes.get(HOLD), notes.get(MARK)


def _written(node: dict[str, Any]) -> tuple[Any, Any, Any]:
    """What ufcctl may write on a Node: its labels, annotations and spec. Not its resourceVersion: a real
    kubelet writes the Node's status on its own."""
    meta = node["metadata"]
    return meta.get("labels"), meta.get("annotations"), node["spec"]


def _newest(stack: Stack, kind: str) -> dict[str, Any]:
    with StateStore(Path(stack.env["UFC_STATE_DIR"]) / "state.db") as store:
        run = store.runs(kind)[0]
        return {"status": run.status, "nodes": {n.host: n for n in store.nodes(run.run_id)}}


def _plans(stack: Stack) -> dict[str, list[Any]]:
    inventory = load_inventory(stack.inventory)
    return {w: host_plan(w, inventory.hosts[w].vars) for w in WORKERS}


def _fabric_files(host: str) -> tuple[str, str]:
    """hccn_tool's state and hccn.conf's mtime and size: what a fabric write changes."""
    return _exec(host, "cat", HCCN_STATE), _exec(host, "stat", "-c", "%Y %s", "/etc/hccn.conf")


@pytest.fixture(scope="module")
def lab(stack: Stack) -> Iterator[Stack]:
    stack.require_deployed()
    plans = _plans(stack)
    assert all(plans.values()), f"no fabric plan in the lab inventory: {[w for w in plans if not plans[w]]}"
    for w in WORKERS:
        assert _exec(w, "cat", WIRING, check=False), (
            f"{w} has no {WIRING}: a lab built before the NPU fabric wiring (rebuild it: `ufcctl lab up`)")
    fresh = driverless(WORKERS)
    try:
        yield stack
    finally:
        restore(fresh, CP1)


FAULTS: dict[str, tuple[dict[str, Any], int, str]] = {
    # worker: (fault file, chip, words the reason must hold)
    "w01": ({"link_down": [3]}, 3, "link DOWN"),
    "w02": ({"net_health": {"5": "Receive timeout"}}, 5, "net health Receive timeout"),
    "w03": ({"lldp": {"1": {"switch": "9", "port": "40"}}}, 1, "LLDP neighbour 9 port 40"),
    "w04": ({"duplicate_ip": {"2": "@3"}}, 2, "duplicate of chip 3's"),
}


def test_a_faulty_node_stays_tainted_and_held_naming_its_chip_and_repair_admits_it(lab: Stack) -> None:
    plans = _plans(lab)
    for short, (faults, _, _) in FAULTS.items():
        host = f"{STACK_LAB}-{short}"
        if "duplicate_ip" in faults:  # another chip's planned address (what a copied hccn.conf does)
            faults = {"duplicate_ip": {"2": plans[host][3].address}}
        write_faults(host, faults)
    first = _shell(lab, UPGRADE)
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-2000:]
    run = _newest(lab, "upgrade-drivers")
    nodes = _nodes()
    for short, (_, chip, words) in FAULTS.items():
        host = f"{STACK_LAB}-{short}"
        record = run["nodes"][host]
        why = record.reason or ""
        assert record.state == "failed" and f"chip {chip}: " in why and words in why, (host, why)
        tainted, cordoned, reason, mark = _state(nodes[host])
        assert tainted and cordoned and mark == "npu-fabric", (host, nodes[host]["spec"])
        assert reason and f"chip {chip}: " in reason and words in reason, (host, reason)
    for host in WORKERS[4:]:  # the healthy ones: admitted, device IPs and hccn.conf as planned
        assert run["nodes"][host].state == "done"
        assert _state(nodes[host]) == (False, False, None, None), nodes[host]["metadata"]
        conf = _exec(host, "cat", "/etc/hccn.conf")
        for plan in _plans(lab)[host]:
            assert f"address_{plan.chip}={plan.address}\n" in conf
            assert f"gateway_{plan.chip}={plan.gateway}\n" in conf
        assert f"ipaddr:{plans[host][7].address}" in _exec(
            host, "/usr/local/Ascend/driver/tools/hccn_tool", "-i", "7", "-ip", "-g")

    for short in FAULTS:
        write_faults(f"{STACK_LAB}-{short}", None)
    second = _shell(lab, UPGRADE)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-2000:]
    nodes = _nodes()
    assert {h: _state(n) for h, n in nodes.items()} == dict.fromkeys(WORKERS, (False, False, None, None))


def _drivers(lab: Stack, line: str, watch: list[str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`line` with the lab's kubeconfig (the engine drains), and the workers seen cordoned meanwhile."""
    with CordonWatch(CP1, watch) as cordons:
        proc = _shell(lab, f"KUBECONFIG=.ufc/lab/admin.conf {line}")
    return proc, cordons.seen


def test_with_the_kubeconfig_a_no_op_drains_nothing_and_an_upgrade_drains(lab: Stack) -> None:
    """Decision 18: a node whose labels say the target is neither cordoned nor drained (no pod evicted); a
    new version drains it first (the engine), and a node an operator cordoned stays cordoned; labels left
    at the target on a node that is not makes its play drain it (mark npu-driver) before installing, and
    its admission uncordons it."""
    w05, old_release, new = f"{STACK_LAB}-w05", RELEASES[0], RELEASES[1]
    assert (old_release.driver_version, old_release.firmware_version) == (
        load_inventory(lab.inventory).hosts[w05].vars["ufc_npu_driver_version"],
        load_inventory(lab.inventory).hosts[w05].vars["ufc_npu_firmware_version"])
    to_new = f"--version {new.driver_version} --firmware-version {new.firmware_version}"
    try:
        with probe_pods(CP1, WORKERS) as pods:
            noop, cordoned = _drivers(lab, UPGRADE, WORKERS)
            assert noop.returncode == 0, noop.stdout[-3000:] + noop.stderr[-2000:]
            run = _newest(lab, "upgrade-drivers")
            assert all(run["nodes"][w].state == "done" and not run["nodes"][w].changed for w in WORKERS), run
            assert cordoned == set() and movable_pods(CP1, WORKERS) == pods  # nothing cordoned or evicted

            # an operator's cordon before the rollout: the engine drains and upgrades the node, and the
            # cordon outlives the rollout (only a node ufcctl cordoned, by its mark, is uncordoned)
            _exec(CP1, *KUBECTL, "cordon", w05)
            upgrade, cordoned = _drivers(lab, f"{UPGRADE} --limit {w05} {to_new}", WORKERS)
            assert upgrade.returncode == 0, upgrade.stdout[-3000:] + upgrade.stderr[-2000:]
            assert cordoned == {w05}  # drained by the engine (rc 0: the drain succeeded)
            node = _nodes()[w05]
            assert node["metadata"]["labels"]["ufcctl.io/npu-driver"] == new.driver_version
            assert _state(node) == (False, True, None, None)  # still the operator's cordon
            _exec(CP1, *KUBECTL, "uncordon", w05)

            set_installed(w05, old_release)  # labels at the new target, the node not: a reimaged node's
            stale, cordoned = _drivers(lab, f"{UPGRADE} --limit {w05} {to_new}", WORKERS)
            assert stale.returncode == 0, stale.stdout[-3000:] + stale.stderr[-2000:]
            record = _newest(lab, "upgrade-drivers")["nodes"][w05]
            assert record.state == "done" and record.changed, record
            assert cordoned == {w05}  # drained in its play
            assert _state(_nodes()[w05]) == (False, False, None, None)  # uncordoned, mark npu-driver gone
    finally:
        _exec(CP1, *KUBECTL, "uncordon", w05, check=False)
        set_installed(w05, old_release)  # the fleet's release again, labelled so
        _exec(CP1, *KUBECTL, "label", "node", w05, "--overwrite",
              f"ufcctl.io/npu-driver={old_release.driver_version}",
              f"ufcctl.io/npu-firmware={old_release.firmware_version}", check=False)


def test_npu_check_on_a_healthy_fleet_exits_0_and_changes_nothing(lab: Stack) -> None:
    before = {w: _fabric_files(w) for w in WORKERS}
    nodes = {h: _written(n) for h, n in _nodes().items()}
    proc = _shell(lab, CHECK)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    run = _newest(lab, "npu-check")
    assert run["status"] == "done"
    for host in WORKERS:
        record = run["nodes"][host]
        assert record.state == "done" and not record.changed, (host, record)
        assert "8 chip(s) as planned" in (record.reason or ""), record.reason
        print(f"{host}: {record.seconds:.1f} s, {record.reason}")
    assert {w: _fabric_files(w) for w in WORKERS} == before
    assert {h: _written(n) for h, n in _nodes().items()} == nodes

    write_faults(f"{STACK_LAB}-w05", {"link_down": [6]})
    try:
        proc = _shell(lab, CHECK)
    finally:
        write_faults(f"{STACK_LAB}-w05", None)
    assert proc.returncode == 1
    reason = _newest(lab, "npu-check")["nodes"][f"{STACK_LAB}-w05"].reason or ""
    assert "chip 6: link DOWN" in reason, reason


def test_npu_check_deep_pings_each_chip_of_the_tor_peer(lab: Stack) -> None:
    proc = _shell(lab, DEEP)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    run = _newest(lab, "npu-check")
    for host in WORKERS:  # two servers per ToR in the lab: 8 pairs each, no loss
        record = run["nodes"][host]
        assert "ping: 8 pair(s), worst loss 0%" in (record.reason or ""), (host, record.reason)
        print(f"{host}: {record.seconds:.1f} s, {record.reason}")
