"""upgrade-drivers does not drain nodes whose Node labels already say the target (docs/architecture.md
decision 18): the labels' target from options and inventory, the guard's one label-selector read, the
drain pool admitting such nodes untouched and unreleased with `labels_at_target` in their go."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from tests.helpers.fake_ansible import FakeAnsible
from tests.unit.rollout.test_drain_guard import FakeKubectlCommand, guard, host, verbs
from tests.unit.rollout.test_engine import start
from ufcctl.domain.inventory.model import Host
from ufcctl.domain.npu.driver_labels import DRIVER_LABEL, FIRMWARE_LABEL, driver_labels, target_labels
from ufcctl.engine.kubectl import Kubectl
from ufcctl.rollout.drain import DrainGuard
from ufcctl.rollout.kind import RolloutRequest
from ufcctl.rollout.kinds import upgrade_drivers
from ufcctl.rollout.store import StateStore

AT = {DRIVER_LABEL: "24.1.rc3", FIRMWARE_LABEL: "7.5.0.2.220"}
INVENTORY = {"ufc_npu_driver_version": "24.1.rc3", "ufc_npu_firmware_version": "7.5.0.2.220"}


class LabelledNodes(FakeKubectlCommand):
    """kubectl whose `get nodes --selector` answers the nodes carrying every label of the selector."""

    def __init__(self, labels: dict[str, dict[str, str]]):
        super().__init__()
        self.labels = labels

    def __call__(self, argv: Sequence[str], timeout: int) -> tuple[int, str, str]:
        args = list(argv)[3:]
        if args[:2] == ["get", "nodes"]:
            self.calls.append(args)
            wanted = dict(term.split("=", 1) for term in args[args.index("--selector") + 1].split(","))
            names = [n for n, have in self.labels.items() if all(have.get(k) == v for k, v in wanted.items())]
            return 0, "".join(f"node/{n}\n" for n in names), ""
        return super().__call__(argv, timeout)


def labelled_guard(command: FakeKubectlCommand) -> DrainGuard:
    return DrainGuard(Kubectl("kubectl", Path("/kc"), command=command), False, drain_timeout=30,
                      targets=lambda h: target_labels(h.vars, {}))


# -- the target's labels ------------------------------------------------------------------------


def test_target_labels_follow_options_over_inventory_and_firmware_enabled() -> None:
    assert target_labels(INVENTORY, {}) == AT
    assert target_labels(INVENTORY, {"version": "25.0.rc1", "firmware_version": "7.7.0.1.1"}) == {
        DRIVER_LABEL: "25.0.rc1", FIRMWARE_LABEL: "7.7.0.1.1"}
    no_firmware = {**INVENTORY, "ascend_driver_firmware_enabled": False}
    assert target_labels(no_firmware, {}) == {DRIVER_LABEL: "24.1.rc3"}
    assert target_labels({**INVENTORY, "ascend_driver_version": "24.1.rc4"}, {})[DRIVER_LABEL] == "24.1.rc4"


def test_no_labels_when_the_target_cannot_be_known_or_labelled() -> None:
    assert target_labels({**INVENTORY, "ascend_driver_force": True}, {}) == {}  # reinstalls: drain
    assert target_labels({**INVENTORY, "ascend_driver_version": "{{ v }}"}, {}) == {}  # templated
    assert target_labels({}, {}) == {}
    assert driver_labels("24.1.rc3-", "7.5", True) == {}  # not a label value: never matched
    assert driver_labels("x" * 64, "", False) == {}


# -- the guard's read ---------------------------------------------------------------------------


def test_nodes_labelled_at_target_are_found_with_one_call_for_the_whole_run() -> None:
    cmd = LabelledNodes({"w01": AT, "w02": {**AT, FIRMWARE_LABEL: "7.5.0.1.129"}, "w03": {}, "w04": AT})
    hosts = [host(f"w0{i}", **INVENTORY) for i in range(1, 6)]
    assert labelled_guard(cmd).at_target(hosts) == {"w01", "w04"}
    assert len(cmd.calls) == 1  # one label selector, answered with names only
    query = f"{DRIVER_LABEL}=24.1.rc3,{FIRMWARE_LABEL}=7.5.0.2.220"
    assert cmd.calls[0][:4] == ["get", "nodes", "--selector", query]


def test_the_kubernetes_node_name_is_what_the_labels_are_read_for() -> None:
    cmd = LabelledNodes({"node-a": AT})
    assert labelled_guard(cmd).at_target([host("w01", ufc_kube_node_name="node-a", **INVENTORY)]) == {"w01"}


def test_a_guard_without_targets_or_a_host_without_a_known_target_finds_none() -> None:
    cmd = LabelledNodes({"w01": AT})
    assert guard(cmd).at_target([host("w01", **INVENTORY)]) == set()
    assert labelled_guard(cmd).at_target([host("w01", ascend_driver_force=True, **INVENTORY)]) == set()
    assert cmd.calls == []  # nothing to ask: no kubectl call


def test_upgrade_drivers_hooks_give_the_guard_the_runs_target(monkeypatch) -> None:
    seen = {}

    def fake_guard(**kw):
        seen.update(kw)
        return None, "x"

    monkeypatch.setattr("ufcctl.rollout.drain.drain_guard", fake_guard)
    options = {"version": "25.0.rc1", "firmware_version": "7.7.0.1.1"}
    request = RolloutRequest(Path("/inv"), 1, options=options)
    upgrade_drivers.KIND.hooks(request)
    assert seen["targets"](Host("w01", INVENTORY, frozenset())) == {
        DRIVER_LABEL: "25.0.rc1", FIRMWARE_LABEL: "7.7.0.1.1"}


# -- the drain pool ----------------------------------------------------------------------------


class AtTargetGuard:
    """Test double: w00 and w03 labelled at target; records what is asked, prepared and released."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.asked: list[list[str]] = []
        self.prepared: list[str] = []
        self.released: list[tuple[str, bool]] = []

    def at_target(self, hosts: Sequence[Host]) -> set[str]:
        with self.lock:
            self.asked.append([h.name for h in hosts])
        return {"w00", "w03"}

    def prepare(self, host: Host) -> str | None:
        with self.lock:
            self.prepared.append(host.name)
        return None

    def release(self, host: Host, ok: bool) -> None:
        with self.lock:
            self.released.append((host.name, ok))


def test_nodes_at_target_are_admitted_undrained_unreleased_and_told_so(store: StateStore,
                                                                       monkeypatch) -> None:
    at = AtTargetGuard()
    monkeypatch.setattr("ufcctl.rollout.drain.drain_guard", lambda **_: (at, "cordon + drain"))
    fake = FakeAnsible()
    summary = start(store, fake, 6, batch=2)
    assert summary.counts["done"] == 6
    assert len(at.asked) == 1 and sorted(at.asked[0]) == [f"w{i:02d}" for i in range(6)]  # once per run
    assert sorted(at.prepared) == ["w01", "w02", "w04", "w05"]  # never cordoned or drained
    assert sorted(at.released) == [("w01", True), ("w02", True), ("w04", True), ("w05", True)]
    assert {h: f["labels_at_target"] for h, f in fake.facts.items()} == {
        "w00": True, "w01": False, "w02": False, "w03": True, "w04": False, "w05": False}


def test_a_failed_label_read_drains_every_node(store: StateStore, monkeypatch) -> None:
    at = AtTargetGuard()

    def broken(hosts: Sequence[Host]) -> set[str]:
        raise RuntimeError("kubectl get nodes failed")

    at.at_target = broken  # type: ignore[method-assign]
    monkeypatch.setattr("ufcctl.rollout.drain.drain_guard", lambda **_: (at, "cordon + drain"))
    fake = FakeAnsible()
    assert start(store, fake, 4, batch=2).counts["done"] == 4
    assert sorted(at.prepared) == ["w00", "w01", "w02", "w03"]
    assert not any(f["labels_at_target"] for f in fake.facts.values())


def test_a_node_whose_labels_differ_is_still_drained_first() -> None:
    cmd = LabelledNodes({"w01": {DRIVER_LABEL: "24.1.rc2", FIRMWARE_LABEL: "7.5.0.2.220"}})
    g = labelled_guard(cmd)
    assert g.at_target([host("w01", **INVENTORY)]) == set()
    assert g.prepare(host("w01", **INVENTORY)) is None
    assert verbs(cmd)[-2:] == ["annotate", "drain"]  # marked, then drained (kubectl drain cordons)
