"""The full lane's workers run the shared lab's tests at nice 0 and every other test at SIDE_NICE."""

from __future__ import annotations

import os

import pytest

from tests.helpers import worker_priority
from tests.helpers.worker_priority import SIDE_NICE, STACK_GROUP, wanted_nice


class _Item:
    def __init__(self, group: str | None) -> None:
        self.group = group

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        if name != "xdist_group" or self.group is None:
            return None
        return pytest.mark.xdist_group(self.group).mark


def test_the_stack_runs_at_0_and_the_rest_lower() -> None:
    assert wanted_nice(_Item(STACK_GROUP), workers=3, euid=0) == 0  # type: ignore[arg-type]
    assert wanted_nice(_Item("test_upgrade_drivers_lab"), workers=3, euid=0) == SIDE_NICE  # type: ignore[arg-type]
    assert wanted_nice(_Item(None), workers=3, euid=0) == SIDE_NICE  # type: ignore[arg-type]
    assert SIDE_NICE > 0


def test_one_worker_or_no_root_leaves_the_process_alone() -> None:
    assert wanted_nice(_Item(None), workers=1, euid=0) is None  # type: ignore[arg-type]
    assert wanted_nice(_Item(None), workers=0, euid=0) is None  # type: ignore[arg-type]
    # without CAP_SYS_NICE a worker could not come back to 0 for the stack
    assert wanted_nice(_Item(None), workers=3, euid=1000) is None  # type: ignore[arg-type]


def test_apply_sets_and_restores_the_nice_value(monkeypatch: pytest.MonkeyPatch) -> None:
    values = {"nice": 0}
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(os, "getpriority", lambda which, who: values["nice"])

    def setpriority(which: int, who: int, value: int) -> None:
        assert (which, who) == (os.PRIO_PROCESS, 0)
        values["nice"] = value

    monkeypatch.setattr(os, "setpriority", setpriority)
    worker_priority.apply(_Item(None))  # type: ignore[arg-type]
    assert values["nice"] == SIDE_NICE
    worker_priority.apply(_Item(STACK_GROUP))  # type: ignore[arg-type]
    assert values["nice"] == 0
