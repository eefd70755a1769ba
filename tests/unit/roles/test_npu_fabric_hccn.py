"""The NPU fabric on a node (roles/ufc_common/module_utils/ufcctl_hccn.py): hccn_tool's output parsed,
/etc/hccn.conf merged, each chip judged (tier 1) and the pings of tier 2, against the lab NPU emulator's
hccn_tool (tests/lab_standins/npu_emulator/hccn_tool.py, run here with its files under a temporary root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.pyimports import load_file

ROOT = Path(__file__).resolve().parents[3]
hccn = load_file(ROOT / "roles" / "ufc_common" / "module_utils" / "ufcctl_hccn.py", "ufcctl_hccn_utils")
TOOL = ROOT / "tests" / "lab_standins" / "npu_emulator" / "hccn_tool.py"


def _plan(chips: int = 2, slot: int = 0) -> list[dict[str, Any]]:
    """What the controller's filter (ufcctl_ascend_driver_fabric_plan) hands the module, for a /24."""
    return [{"chip": i, "address": f"10.20.0.{2 + slot * chips + i}", "netmask": "255.255.255.0",
             "gateway": "10.20.0.1", "switch": "7", "port": str(slot * chips + i + 1)} for i in range(chips)]


class Emulator:
    """The emulator's hccn_tool under tmp: wiring as the lab writes it, faults as a lab test sets them."""

    def __init__(self, tmp: Path, plan: list[dict[str, Any]], faults: dict[str, Any] | None = None):
        self.root = tmp
        (tmp / "etc" / "ufc-npu-emulator").mkdir(parents=True)
        wiring = {"chips": {str(c["chip"]): {"switch": c["switch"], "port": c["port"]} for c in plan}}
        (tmp / "etc" / "ufc-npu-emulator" / "wiring.json").write_text(json.dumps(wiring))
        self.faults({"chips": len(plan), **(faults or {})})
        self.calls: list[list[str]] = []

    def faults(self, faults: dict[str, Any]) -> None:
        (self.root / "etc" / "ufc-npu-emulator.json").write_text(json.dumps(faults))

    def run(self, argv: list[str]) -> tuple[int, str, str]:
        self.calls.append(argv)
        proc = subprocess.run([sys.executable, str(TOOL), *argv[1:]], capture_output=True, text=True,
                              env={**os.environ, "UFC_NPU_EMULATOR_ROOT": str(self.root)}, check=False)
        return proc.returncode, proc.stdout, proc.stderr


def _fabric(tmp: Path, faults: dict[str, Any] | None = None, chips: int = 2) -> tuple[Any, Emulator]:
    plan = _plan(chips)
    emulator = Emulator(tmp, plan, faults)
    return hccn.Fabric(emulator.run, "/usr/local/Ascend/driver/tools/hccn_tool", plan), emulator


def test_parsers_read_the_keywords_of_every_query() -> None:
    assert hccn.parse_ip("ipaddr:10.0.0.2\nnetmask:255.255.255.0\n") == ("10.0.0.2", "255.255.255.0")
    assert hccn.parse_ip("") == ("", "")
    assert hccn.parse_address("default gateway:10.0.0.1, Iface:eth0") == "10.0.0.1"
    assert hccn.parse_link("link status: DOWN\n") == "DOWN"
    assert hccn.parse_health("net health status: Receive timeout\n") == "Receive timeout"
    lldp = "Chassis ID TLV\n\tMAC: x\nPort ID TLV\n\tIfname: 200GE1/0/3\nSystem Name TLV\n\tleaf-07\n"
    assert hccn.parse_lldp(lldp) == ("leaf-07", "200GE1/0/3")
    assert hccn.parse_lldp("Ifname: 4\nSysName: tor-1\n") == ("tor-1", "4")
    ping = "3 packets transmitted, 2 received, 33.33% packet loss\nrtt min/avg/max = 0.1/0.25/0.4 ms\n"
    assert hccn.parse_ping(ping) == (3, 2, 33.33, 0.25)
    assert hccn.parse_ping("3 packets transmitted, 0 received, 100.00% packet loss") == (3, 0, 100.0, None)
    assert hccn.parse_ping("garbage") is None


def test_hccn_conf_keeps_other_keys_and_replaces_ours_in_place() -> None:
    existing = "address_0=1.1.1.1\nsend_arp_status_0=1\naddress_0=9.9.9.9\ntls_enable_0=0\n"
    merged = hccn.merge_conf(existing, _plan(2))
    lines = merged.splitlines()
    assert lines[:3] == ["address_0=10.20.0.2", "send_arp_status_0=1", "tls_enable_0=0"]
    assert "netdetect_1=10.20.0.1" in lines and "gateway_0=10.20.0.1" in lines
    assert hccn.merge_conf(merged, _plan(2)) == merged  # idempotent


def test_configure_sets_every_chip_once_and_then_the_fabric_is_as_planned(tmp_path: Path) -> None:
    fabric, emulator = _fabric(tmp_path)
    before = fabric.check()
    assert all(c["problems"] for c in before)  # nothing set yet: no address, net health Init
    changes, errors = fabric.configure(check_mode=False)
    assert errors == {} and len(changes) == 6  # ip, gateway and detect address of 2 chips
    assert [c["problems"] for c in fabric.check()] == [[], []]
    assert fabric.configure(check_mode=False) == ([], {})  # a second run sets nothing
    assert not [c for c in emulator.calls if "-s" in c[3:5]][6:]


def test_check_mode_reports_the_changes_and_sets_nothing(tmp_path: Path) -> None:
    fabric, emulator = _fabric(tmp_path)
    changes, _ = fabric.configure(check_mode=True)
    assert len(changes) == 6 and not [c for c in emulator.calls if c[3:5] == ["-s", "address"]]


@pytest.mark.parametrize(("faults", "chip", "words"), [
    ({"link_down": [1]}, 1, ["link DOWN", "net health Unreachable"]),
    ({"net_health": {"0": "Receive timeout"}}, 0, ["net health Receive timeout"]),
    ({"lldp": {"1": {"switch": "9", "port": "14"}}}, 1, ["LLDP neighbour 9 port 14 (expected 7 port 2)"]),
    ({"duplicate_ip": {"0": "10.20.0.3"}}, 0,
     ["device ip 10.20.0.3/255.255.255.0 (duplicate of chip 1's planned"]),
], ids=["link-down", "net-health", "miscabled", "duplicate-ip"])
def test_each_fault_names_its_chip_and_only_it(tmp_path: Path, faults: dict[str, Any], chip: int,
                                               words: list[str]) -> None:
    fabric, emulator = _fabric(tmp_path)
    fabric.configure(check_mode=False)
    emulator.faults({"chips": 2, **faults})
    _, errors = fabric.configure(check_mode=False)
    chips = fabric.check(errors)
    problems = {c["chip"]: " / ".join(c["problems"]) for c in chips if c["problems"]}
    assert list(problems) == [chip], problems
    for word in words:
        assert word in problems[chip]
    line = hccn.summary(chips)
    assert line.startswith(f"NPU fabric: chip {chip}: ")
    emulator.faults({"chips": 2})  # repaired: the next run passes
    _, errors = fabric.configure(check_mode=False)
    assert [c["problems"] for c in fabric.check(errors)] == [[], []]


def test_the_emulator_refuses_what_the_tool_refuses(tmp_path: Path) -> None:
    _, emulator = _fabric(tmp_path)
    assert emulator.run(["t", "-i", "8", "-link", "-g"])[0] == 1  # 2 chips: ids 0-1
    assert emulator.run(["t", "-i", "x", "-link", "-g"])[0] == 1
    bad = [["-ip", "-s", "address", "10.20.0.300", "netmask", "255.255.255.0"],
           ["-ip", "-s", "address", "10.20.0.4", "netmask", "255.0.255.0"],
           ["-ip", "-s", "address", "10.20.0.0", "netmask", "255.255.255.0"],
           ["-gateway", "-s", "gateway", "nowhere"], ["-ping", "-g", "address", "1.2.3"]]
    for args in bad:
        rc, _, err = emulator.run(["t", "-i", "0", *args])
        assert rc != 0 and ("invalid" in err.lower() or "usage" in err.lower()), (args, err)


def test_ping_pairs_report_loss_and_latency(tmp_path: Path) -> None:
    fabric, emulator = _fabric(tmp_path)
    fabric.configure(check_mode=False)
    emulator.faults({"chips": 2, "ping_loss": {"10.20.0.5": 100}})
    pairs = fabric.ping({"0": ["10.20.0.4"], "1": ["10.20.0.5"]}, 3)
    found = [(p["chip"], p["peer"], p["loss"]) for p in pairs]
    assert found == [(0, "10.20.0.4", 0.0), (1, "10.20.0.5", 100.0)]
    assert pairs[0]["avg_ms"] is not None and pairs[1]["avg_ms"] is None
    assert "worst loss 100%" in hccn.ping_line(pairs)


def test_the_chips_ping_at_the_same_time_and_the_pairs_stay_in_chip_order() -> None:
    """Four chips' first pings must all be running at once to pass the barrier: pings one chip after
    another would break it (BrokenBarrierError) instead of passing."""
    barrier = threading.Barrier(4, timeout=20)
    first: set[str] = set()
    lock = threading.Lock()

    def run(argv: list[str]) -> tuple[int, str, str]:
        chip = argv[2]
        with lock:
            new = chip not in first
            first.add(chip)
        if new:
            barrier.wait()
        return 0, "3 packets transmitted, 3 received, 0.00% packet loss\nrtt min/avg/max = 1/2/3 ms\n", ""

    fabric = hccn.Fabric(run, "hccn_tool", _plan(4))
    peers = {str(i): [f"10.30.0.{10 * i + k}" for k in range(3)] for i in range(4)}
    pairs = fabric.ping(peers, 3)
    expected = [(i, f"10.30.0.{10 * i + k}") for i in range(4) for k in range(3)]
    assert [(p["chip"], p["peer"]) for p in pairs] == expected
    assert {p["loss"] for p in pairs} == {0.0}


def test_metrics_name_each_chip() -> None:
    chips = [{"chip": 0, "link": "UP", "problems": []},
             {"chip": 1, "link": "DOWN", "problems": ["link DOWN"]}]
    text = hccn.metrics(chips, [{"chip": 0, "peer": "10.0.0.9", "loss": 50.0}])
    assert 'ufcctl_npu_fabric_link_up{chip="1"} 0' in text
    assert 'ufcctl_npu_fabric_as_planned{chip="0"} 1' in text
    assert 'ufcctl_npu_fabric_ping_loss_ratio{chip="0",peer="10.0.0.9"} 0.5000' in text


def test_a_ping_whose_tool_call_fails_is_tried_once_more_and_a_second_failure_names_the_error() -> None:
    """A failed hccn_tool call is not a measured loss: once more; twice failed, the pair keeps its error."""
    calls: dict[str, int] = {}
    fails = {"10.40.0.1": 1, "10.40.0.2": 2}  # how many times each peer's call fails before answering

    def run(argv: list[str]) -> tuple[int, str, str]:
        peer = argv[argv.index("address") + 1]
        calls[peer] = calls.get(peer, 0) + 1
        if calls[peer] <= fails.get(peer, 0):
            return 1, "", "Error: device busy\n"
        return 0, "3 packets transmitted, 3 received, 0.00% packet loss\nrtt min/avg/max = 1/2/3 ms\n", ""

    fabric = hccn.Fabric(run, "hccn_tool", _plan(1))
    pairs = fabric.ping({"0": ["10.40.0.0", "10.40.0.1", "10.40.0.2"]}, 3)
    assert calls == {"10.40.0.0": 1, "10.40.0.1": 2, "10.40.0.2": 2}
    assert [(p["peer"], p["loss"], p.get("error")) for p in pairs] == [
        ("10.40.0.0", 0.0, None), ("10.40.0.1", 0.0, None), ("10.40.0.2", 100.0, "Error: device busy")]
