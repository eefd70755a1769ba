"""`ufcctl npu check` (ufcctl/rollout/kinds/npu_check.py): the ToR address lists tier 2 pings, the kind's
extra vars, the node report a done node keeps as its reason, and the lab's wiring from the same plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ufcctl.domain.inventory.model import Group, Host, Inventory
from ufcctl.domain.npu.fabric_check import tor_addresses
from ufcctl.domain.npu.fabric_plan import host_plan
from ufcctl.engine.run_events import EventSink
from ufcctl.errors import InputError
from ufcctl.lab.layout import plan_layout
from ufcctl.lab.npu import npu_wiring
from ufcctl.rollout.catalog import KINDS
from ufcctl.rollout.chunks import NODE_REPORT, NodeEvents
from ufcctl.rollout.kinds import npu_check


def _inventory(extra: dict[str, Any] | None = None) -> Inventory:
    hosts = {}
    for i in range(4):
        name = f"w{i}"
        values = {"npu_tor_id": i // 2, "npu_slice_id": i % 2, "npu_accelerator_type": "module",
                  "npu_fabric_subnet": f"10.9.{i // 2}.0/24", **(extra or {}).get(name, {})}
        hosts[name] = Host(name, values, frozenset({"all", "kube_node", "npu_node"}))
    hosts["w9"] = Host("w9", {"npu_tor_id": 0}, frozenset({"all", "kube_node", "npu_node"}))  # no plan
    groups = {"npu_node": Group("npu_node", hosts=tuple(hosts)), "kube_node": Group("kube_node",
                                                                                    children=("npu_node",))}
    return Inventory("inv", hosts, groups)


def test_every_tor_lists_each_chips_addresses_once() -> None:
    tors = npu_check.fabric_tors(_inventory())[npu_check.TORS_VAR]
    assert sorted(tors) == ["0", "1"]
    assert tors["0"]["0"] == ["10.9.0.2", "10.9.0.10"]  # chip 0 of slot 0 and of slot 1
    assert tors["1"]["7"] == ["10.9.1.9", "10.9.1.17"]
    assert sum(len(a) for chips in tors.values() for a in chips.values()) == 4 * 8  # w9 has no plan


def test_a_bad_plan_stops_the_run_naming_the_host() -> None:
    with pytest.raises(InputError, match="host w1"):
        npu_check.fabric_tors(_inventory({"w1": {"npu_fabric_subnet": "10.9.0.0/33"}}))


def test_tor_addresses_skips_hosts_without_a_tor_or_plan() -> None:
    plan = host_plan("a", {"npu_tor_id": 3, "npu_slice_id": 0, "npu_accelerator_type": "card",
                           "npu_fabric_subnet": "10.1.0.0/28"})
    assert tor_addresses([(3, plan), (None, plan), (4, [])]) == {"3": {"0": ["10.1.0.2"], "1": ["10.1.0.3"]}}


def test_the_kind_is_registered_read_only_and_passes_its_options() -> None:
    kind = KINDS.get("npu-check")
    assert kind is npu_check.KIND and kind.hooks(None)[0] is None  # type: ignore[arg-type]
    extravars = kind.extravars(npu_check.check_options(deep=True, ping_count=5, max_loss=1.5))
    assert extravars == {"ascend_driver_check_deep": True, "ascend_driver_check_ping_count": 5,
                         "ascend_driver_check_max_loss": 1.5}


class Ends:
    def __init__(self) -> None:
        self.finished: list[tuple[str, str, str | None]] = []

    def finish(self, host: str, state: str, reason: str | None, changed: bool | None = None) -> None:
        self.finished.append((host, state, reason))

    def skipped_step(self, host: str, task: str, message: str) -> None:
        raise AssertionError("a report is not a SKIPPED step")


def test_a_done_node_keeps_its_report_line_as_its_reason(tmp_path: Path) -> None:
    ends = Ends()
    events = NodeEvents(ends, npu_check.MARKER_TASK)  # type: ignore[arg-type]
    sink = EventSink("run-1", tmp_path, events, events.result)
    line = "NPU fabric: 8 chip(s) as planned; ping: 8 pair(s), worst loss 0%"
    sink({"event": "runner_on_ok", "event_data": {"host": "n1", "task": "check", "res": {NODE_REPORT: line}}})
    sink({"event": "runner_on_ok", "event_data": {"host": "n1", "task": npu_check.MARKER_TASK, "res": {}}})
    sink({"event": "runner_on_ok", "event_data": {"host": "n2", "task": npu_check.MARKER_TASK, "res": {}}})
    sink.close()
    assert ends.finished == [("n1", "done", line), ("n2", "done", None)]


def test_the_lab_cables_every_chip_as_its_plan_expects() -> None:
    layout = plan_layout("ufc", 4, "10.89.99.0/24")
    wiring = {name: json.loads(text) for name, text in npu_wiring(layout).items()}
    assert sorted(wiring) == [n.name for n in layout.workers]
    for node in layout.workers:
        chips = wiring[node.name]["chips"]
        assert node.topology is not None
        slot = node.topology.slice_id
        assert chips["0"] == {"switch": str(node.topology.tor_id), "port": str(slot * 8 + 1)}
        assert len(chips) == 8
