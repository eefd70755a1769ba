"""Every table of every command, with long real-looking names, printed at 80 columns: wrapped, never cut."""

from __future__ import annotations

import copy
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ufcctl.cli import lab as lab_cli
from ufcctl.domain.etcd.defrag import LastDefrag
from ufcctl.domain.etcd.defrag_result import MemberOutcome, RunReport, Sizes
from ufcctl.domain.etcd.status import ClusterStatus, MemberRow
from ufcctl.domain.inventory.summary import GroupSummary, InventorySummary
from ufcctl.domain.inventory.topology import Topology
from ufcctl.domain.monitoring.health import Alert, EtcdHealth, HealthReport, NpuChip, VipHealth
from ufcctl.domain.rollout.plan import Batch, Projection, RolloutPlan
from ufcctl.domain.rollout.summary import NodeOutcome, RolloutSummary
from ufcctl.engine.run_result import HostResult, RunResult
from ufcctl.lab.lab import LabStatus
from ufcctl.lab.layout import (
    ROLE_CONTROL_PLANE,
    ROLE_NPU_MIRROR,
    ROLE_WORKER,
    LabLayout,
    LabNode,
    NodeTopology,
)
from ufcctl.lab.nodes import LABEL_ROLE
from ufcctl.lab.podman import ContainerInfo
from ufcctl.report import output, rollout
from ufcctl.report.etcd import print_defrag, print_etcd_status
from ufcctl.report.health import print_health
from ufcctl.report.inventory import print_inventory_summary
from ufcctl.report.tables import Fitted, share_widths
from ufcctl.rollout.store import RunRecord

WIDTH = 80
CP = [f"ufc-cp-superpod-0001-rack-12-node-{i:04d}" for i in range(1, 4)]
WK = [f"ufc-wk-superpod-0001-rack-12-node-{i:04d}" for i in range(1, 17)]
INVENTORY = "/srv/ufc/inventories/production-superpod-0001-training-cluster"
RUN_ID = "upgrade-drivers-20240501-120000-3f9a2c"  # engine.runner.new_run_id
GIB = 1 << 30
TASK_FAILURE = ("non-zero return code from /usr/local/Ascend/driver/install.sh --full --quiet: "
                "the npu-smi device 7 did not come back after the driver reload")


class Narrow(Console):
    """The console the commands print on in this test: 80 columns, no terminal; keeps what they print."""

    printed: list[Any] = []

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(width=WIDTH, force_terminal=False, file=io.StringIO(), **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        Narrow.printed.extend(o for o in objects if isinstance(o, (Table, Fitted)))
        super().print(*objects, **kwargs)


def inventory_show() -> None:
    tors = {f"tor-superpod-0001-rack-{i:02d}-leaf-a": 16 for i in range(1, 5)}
    summary = InventorySummary(
        path=INVENTORY, hosts=19,
        groups=(
            GroupSummary("kube_control_plane", 3, (f"{CP[0][:-4]}[0001:0003]",), ()),
            GroupSummary("npu_workers_superpod_0001", 16, tuple(WK[:8]), ("npu_tor_superpod_0001_rack_12",)),
            GroupSummary("etcd_events", 3, tuple(CP), ()),
        ),
        topology=Topology(
            hosts=19, npu_nodes=16, groups={},
            domains={"accelerator_types": {"ascend-910b-module-8x-hccs": 16}, "tors": tors,
                     "super_pods": {}, "racks": {"rack-12-row-c-hall-2-datacenter-east": 16}, "slices": {}},
            npu_nodes_without={"accelerator_types": 0, "tors": 0, "super_pods": 16, "racks": 0, "slices": 16},
        ),
    )
    print_inventory_summary(summary)


def health() -> None:
    report = HealthReport(
        source=f"http://{CP[1]}:8428/api/v1/query",
        alerts=(Alert("EtcdDatabaseQuotaLowSpace", "critical",
                      (("etcd_cluster", "core"), ("instance", f"{CP[0]}:2379"), ("job", "etcd"))),),
        etcd=(
            EtcdHealth("core", 2, 3, f"{CP[0]}:2379", 7.8 * GIB, 8 * GIB, 97.5, 1714564800.0, "failed",
                       ("quota used 97.5% of 8.0 GiB", "1 of 3 members down")),
            EtcdHealth("events", 3, 3, f"{CP[1]}:2381", 1.2 * GIB, 8 * GIB, 15.0, None, None, ()),
        ),
        vips=(VipHealth("10.128.0.10", (CP[0], CP[1])),),
        nodes_down=(f"{WK[0]}:9100",),
        npu_unhealthy=(NpuChip(f"{WK[1]}:8082", "7"),),
        problems=("etcd core: quota used 97.5% of 8.0 GiB",),
    )
    print_health(report)


def etcd_status() -> None:
    members = tuple(
        MemberRow(host, f"https://{host}:2379",
                  "healthy" if i else f"unreachable: connect to {host} timed out", i == 1,
                  7 * GIB, 3 * GIB, 57.1, ("NOSPACE",) if i == 2 else (),
                  LastDefrag(1714564800.0, 8 * GIB, 3 * GIB, f"ufc-etcd-defrag-agent@{host}"))
        for i, host in enumerate(CP)
    )
    print_etcd_status([ClusterStatus("core", False, (f"{CP[0]} unreachable", "alarm NOSPACE raised"),
                                   CP[1], ("NOSPACE",), members)])


def etcd_defrag() -> None:
    outcome = MemberOutcome(CP[0], "defragmented", "fragmented 57.1% (4.0 GiB of 7.0 GiB unused), over 50%",
                            True, Sizes(7 * GIB, 3 * GIB), Sizes(3 * GIB, 3 * GIB))
    skipped = MemberOutcome(CP[1], "skipped", "fragmented 2%")
    print_defrag([RunReport("core", [outcome, skipped])], True)


def runs() -> None:
    rollout.print_runs([RunRecord(RUN_ID, "upgrade-drivers", f"{INVENTORY}/hosts.yml", {}, "failed",
                                  1714564800.0, 1714568400.0,
                                  counts={"done": 15872, "failed": 3, "skipped": 125, "pending": 0})])


def plan() -> None:
    tors = tuple(f"tor-superpod-0001-rack-{i:02d}-leaf-a" for i in range(6))
    batches = (Batch(1, tuple(WK[:4]), True, tors[:1]), Batch(2, tuple(WK[4:]), False, tors))
    projection = Projection(612.0, f"run {RUN_ID} (median of 16 nodes)", 612.0, 1224.0)
    rollout.print_plan(RolloutPlan(batches, 12, 2, 4, "npu_tor_id"), projection, 16)


def rollout_summary() -> None:
    nodes = (NodeOutcome(WK[0], 1, "failed", f"task 'npu_driver : Install the driver' failed: {TASK_FAILURE}",
                         True, 1234.5, 3),
             NodeOutcome(WK[1], 1, "done", None, True, 612.0, 1),
             NodeOutcome(WK[2], 2, "skipped", "not drained: 3 NPU training pods still running (pdb)"))
    rollout.print_summary(RolloutSummary(RUN_ID, "upgrade-drivers", "failed", nodes,
                                         "max failures reached: 1 of 16 (--max-failures 0)", 5000.0,
                                         {"drain": "skipped: no kubeconfig"}))


def deploy_recap() -> None:
    hosts = {CP[0]: HostResult(CP[0], ok=120, changed=12, failed=1, ran=133,
                               failed_task="etcd : Wait for the etcd member to report healthy",
                               message=f"Status code was -1: https://{CP[0]}:2379/health timed out"),
             CP[1]: HostResult(CP[1], ok=133, changed=12, ran=145)}
    output.print_run_summary(RunResult("run-1", "playbooks/cluster.yml", "failed", 2, hosts,
                                       Path(".ufc/runs/20240501T120000Z-deploy"), 600.0))


def lab_up() -> None:
    rack = "rack-01-developer-workstation"
    nodes = tuple(LabNode(f"ufc-lab-developer-workstation-01-worker-{i:04d}", ROLE_WORKER,
                          f"10.89.0.{20 + i}", NodeTopology(i, 1, 0, rack, "ascend-910b")) for i in range(3))
    mirror = LabNode("ufc-lab-developer-workstation-01-npu-mirror", ROLE_NPU_MIRROR, "10.89.0.9")
    lab_cli._print_nodes(LabLayout("ufc-lab-developer-workstation-01", "ufc-lab-net", "10.89.0.0/24",
                                   "10.89.0.1", "10.89.0.10", nodes, nodes[0].name, mirror))


def lab_status() -> None:
    containers = tuple(ContainerInfo(f"ufc-lab-developer-workstation-01-{role}-{i:04d}", "running",
                                     f"10.89.0.{20 + i}", "localhost/ufc-lab-node:latest", {LABEL_ROLE: role})
                       for i, role in enumerate((ROLE_CONTROL_PLANE, ROLE_WORKER, ROLE_NPU_MIRROR)))
    lab_cli._print_status(LabStatus("ufc-lab-developer-workstation-01", "ufc-lab-net", "10.89.0.0/24",
                                    f"{INVENTORY}-lab", containers))


COMMANDS: dict[str, Callable[[], None]] = {
    "inventory show": inventory_show,
    "health": health,
    "etcd status": etcd_status,
    "etcd defrag": etcd_defrag,
    "runs": runs,
    "plan (deploy, upgrade-drivers, images preheat --dry-run)": plan,
    "rollout summary": rollout_summary,
    "deploy recap": deploy_recap,
    "lab up": lab_up,
    "lab status": lab_status,
}


SEPARATORS = "│┃"


def _plain(value: Any) -> str:
    if value is None:
        return ""
    return value.plain if isinstance(value, Text) else Text.from_markup(str(value)).plain


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _marked(printed: Table | Fitted) -> tuple[Table, str]:
    """The table, with a visible line between columns where its box draws blanks, and its title."""
    table, title = (printed.table, printed.title) if isinstance(printed, Fitted) else (printed, printed.title)
    if table.box is not None and not table.box.head_vertical.strip():
        # same widths, so the same layout: only the blank between two columns becomes a mark
        marked = copy.copy(table.box)
        marked.head_vertical = marked.mid_vertical = marked.foot_vertical = SEPARATORS[0]
        table.box = marked
    return table, _plain(title)


def _columns(rendered: str, count: int) -> list[str]:
    """Each column's text read top to bottom, from the lines that have column marks."""
    columns = [""] * count
    for line in rendered.splitlines():
        if not re.sub(r"[\u2500-\u257f\s]", "", line):  # a rule: box drawing only
            continue
        parts = re.split(f"[{SEPARATORS}]", line)
        if len(parts) == count + 2:  # a box with edges: drop what lies outside them
            parts = parts[1:-1]
        if len(parts) == count:
            columns = [text + part for text, part in zip(columns, parts, strict=True)]
    return [_squeeze(text) for text in columns]


def _render(printed: Table | Fitted) -> str:
    console = Console(width=WIDTH, force_terminal=False, file=io.StringIO())
    console.print(printed)
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_tables_fit_80_columns_without_cutting(command: Callable[[], None], monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    # every table on stdout goes through report.output.stdout_console(), which makes a StdoutConsole
    monkeypatch.setattr(output, "StdoutConsole", Narrow)
    monkeypatch.setattr(Narrow, "printed", [])
    command()
    assert Narrow.printed, "the command printed no table"
    for printed in Narrow.printed:
        table, title = _marked(printed)
        rendered = _render(printed)
        too_long = [line for line in rendered.splitlines() if len(line.rstrip()) > WIDTH]
        assert not too_long, f"lines over {WIDTH} columns:\n" + "\n".join(too_long)
        texts = [title] + [_plain(c) for column in table.columns for c in (column.header, *column.cells)]
        # an ellipsis the data does not have is a cell cut short
        assert rendered.count("…") == sum(t.count("…") for t in texts), rendered
        assert _squeeze(title) in _squeeze(rendered), rendered
        for column, seen in zip(table.columns, _columns(rendered, len(table.columns)), strict=True):
            wanted = "".join(_squeeze(_plain(c)) for c in (column.header, *column.cells))
            assert wanted == seen, f"column {_plain(column.header)!r} cut or lost:\n{rendered}"


@pytest.mark.parametrize(
    ("minimums", "maximums", "available", "widths"),
    [
        ([4, 3], [10, 8], 30, [10, 8]),  # everything fits unwrapped
        ([4, 3], [10, 8], 13, [8, 5]),  # wrapped between words, spare shared by slack
        ([5, 3, 38, 20], [5, 3, 38, 20], 40, [5, 3, 16, 16]),  # long words folded, short columns whole
        ([2, 2], [2, 2], 4, [2, 2]),
    ],
    ids=["fits", "wraps", "folds-longest", "exact"],
)
def test_share_widths(minimums: list[int], maximums: list[int], available: int, widths: list[int]) -> None:
    assert share_widths(minimums, maximums, available) == widths
    assert sum(widths) <= available
