"""Every text a user's terminal gets goes through one sanitizer (report/terminal.py: control characters
shown escaped, rich markup never interpreted in data) and one cut (errors.cut_quoted: quoted values at
80 characters); `ufcctl runs` shows run ids whole at 80 columns (issue 42)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.unit.cli.test_etcd_cli import _inventory
from ufcctl.cli.main import cli
from ufcctl.rollout.store import StateStore

OSC52 = "\x1b]52;c;cHduZWQ=\x07"  # write the clipboard
OSC0 = "\x1b]0;pwned\x07"  # retitle the terminal


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "80"})
    return result.exit_code, result.output


def _inventory_path_with_escapes(tmp_path: Path) -> list[str]:
    return ["inventory", "show", "-i", str(tmp_path / f"inv{OSC52}")]


def _run_with_hostile_status(tmp_path: Path) -> list[str]:
    # the inventory path a run recorded: free text (a state outside the known ones is refused as a corrupt
    # row, issue 42's state.db class), shown by `runs`
    with StateStore() as store:
        store.create_run("upgrade-drivers-20261206-000000-abcdef", "upgrade-drivers",
                         str(tmp_path / f"[/bold]{OSC0}"), {}, [("n1", 0, 0)], status="failed")
    return ["runs"]


def _snapshot_path_with_escapes(tmp_path: Path) -> list[str]:
    inv = _inventory(tmp_path, with_pki=False)
    bad = tmp_path / f"core{OSC0}.db"
    bad.write_bytes(b"x" * 100)
    return ["etcd", "restore", "-i", str(inv), "--cluster", "core", "--from", str(bad)]


def _etcd_member_name(tmp_path: Path) -> list[str]:
    return ["etcd", "member", "replace", "-i", str(_inventory(tmp_path)), "--cluster", "core",
            "--member", f"m9{OSC52}"]


CASES: list[tuple[str, Callable[[Path], list[str]], int]] = [
    ("osc52-in-a-path-of-an-error", _inventory_path_with_escapes, 2),
    ("markup-and-osc0-in-a-recorded-inventory-path", _run_with_hostile_status, 0),
    ("osc0-in-a-snapshot-name", _snapshot_path_with_escapes, 2),
    ("osc52-in-a-member-name", _etcd_member_name, 2),
]


@pytest.mark.parametrize(("make", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_control_characters_reach_the_terminal_escaped(tmp_path: Path, make, code: int) -> None:
    exit_code, out = _run(*make(tmp_path))
    assert exit_code == code, out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x" in out  # shown escaped (a table may fold it across lines)
    assert "internal error" not in out and "MarkupError" not in out


def test_markup_in_data_is_shown_not_interpreted(tmp_path: Path) -> None:
    _run_with_hostile_status(tmp_path)
    code, out = _run("runs")
    assert code == 0 and "[/bold]" in "".join(out.split())  # the table may fold the path across lines


@pytest.mark.parametrize(("args", "whole"), [
    (["images", "preheat", "--dry-run", "a" * 100_000], "a" * 100_000),
    (["etcd", "member", "replace", "--cluster", "core", "--member", "b" * 5_000_000], "b" * 100),
], ids=["100k-image-reference", "5mb-member-name"])
def test_a_quoted_value_is_cut_at_80_characters(tmp_path: Path, args: list[str], whole: str) -> None:
    code, out = _run(*args[:2], "-i", str(_inventory(tmp_path)), *args[2:])
    assert code == 2, out[:500]
    assert whole[:100] not in out and len(out) < 2_000, out[:500]


def test_runs_shows_run_ids_whole_at_80_columns(tmp_path: Path) -> None:
    ids = ["remove-control-plane-20261206-000000-abcdef", "upgrade-drivers-20261206-000001-123456"]
    with StateStore() as store:
        for run_id in ids:
            inventory = str(tmp_path / ("x" * 90) / "inventories" / "prod")
            store.create_run(run_id, run_id.rsplit("-", 3)[0], inventory, {}, [("n1", 0, 0), ("n2", 0, 1)])
    code, out = _run("runs")
    assert code == 0, out
    assert all(run_id in out for run_id in ids), out
    assert max(len(line) for line in out.splitlines()) <= 80, out
