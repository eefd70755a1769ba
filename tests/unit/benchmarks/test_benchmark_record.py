"""The benchmarks' results record: the JSON a `--json` run writes, and the docs/results.md table from it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmarks import benchlib, results_table

ROOT = Path(__file__).resolve().parents[3]

def test_the_flag_is_taken_out_of_argv_before_the_benchmark_parses_it(tmp_path: Path) -> None:
    argv = ["bench_x.py", "6", "--json", str(tmp_path), "--tags", "a"]
    record = benchlib.take_record("bench_x", argv)
    assert argv == ["bench_x.py", "6", "--tags", "a"]
    assert record.path == tmp_path and record.args == ["6", "--tags", "a"]
    argv = ["bench_x.py", f"--json={tmp_path / 'r.json'}"]
    assert benchlib.take_record("bench_x", argv).path == tmp_path / "r.json" and argv == ["bench_x.py"]

def test_without_the_flag_nothing_is_written(tmp_path: Path) -> None:
    record = benchlib.take_record("bench_x", ["bench_x.py", "6"])
    record.figure("wall", 1.0, "s")
    assert record.write() is None

def test_a_record_has_the_documented_shape_and_the_table_reads_it(tmp_path: Path) -> None:
    record = benchlib.take_record("bench_x", ["bench_x.py", "6", "--json", str(tmp_path)])
    record.figure("no-op CPU", 12.34567, "CPU-s")
    record.ratio("baseline/ufcctl", 1.5)
    path = record.write()
    assert path is not None and path.parent == tmp_path and path.name.endswith("-bench_x.json")
    data = json.loads(path.read_text())
    assert results_table.check_record(data) is data
    assert data["benchmark"] == "bench_x" and data["args"] == ["6"]
    assert len(data["commit"]) == 40  # this checkout's HEAD
    assert data["figures"] == {"no-op CPU": {"value": 12.3457, "unit": "CPU-s"}}
    assert data["ratios"] == {"baseline/ufcctl": 1.5}
    assert set(data["load"]) == {"start", "end"} and data["machine"]["cpus"] >= 1

def _write(directory: Path, name: str, commit: str, recorded: str, cpu: float, args: list[str] | None = None,
           load: float = 1.0) -> None:
    data = {"schema": 1, "benchmark": "bench_x", "args": args or ["6"], "commit": commit, "dirty": False,
            "recorded": recorded, "machine": {"cpus": 2}, "load": {"start": load, "end": load},
            "figures": {"no-op CPU": {"value": cpu, "unit": "CPU-s"}}, "ratios": {"b/u": cpu / 10},
            "note": ""}
    (directory / name).write_text(json.dumps(data))

def test_the_table_puts_the_previous_landing_beside_the_current_one(tmp_path: Path) -> None:
    _write(tmp_path, "1.json", "a" * 40, "2026-11-20T10:00:00Z", 60.0)
    _write(tmp_path, "2.json", "b" * 40, "2026-11-27T10:00:00Z", 40.0, load=7.5)
    _write(tmp_path, "3.json", "c" * 40, "2026-11-28T10:00:00Z", 30.0)
    _write(tmp_path, "4.json", "c" * 40, "2026-11-28T11:00:00Z", 20.0, load=2.0)  # same landing, newer
    _write(tmp_path, "5.json", "d" * 40, "2026-11-28T12:00:00Z", 5.0, args=["1"])  # another series
    text = results_table.table(results_table.load(tmp_path))
    rows = text.splitlines()
    run = next(r for r in rows if r.startswith("| `bench_x` 6 |"))
    assert "bbbbbbb 2026-11-27, load 7.5-7.5" in run and "ccccccc 2026-11-28, load 2-2" in run
    assert "| | no-op CPU | 40 CPU-s | 20 CPU-s | -50 % |" in rows
    assert "| | b/u | 4 x | 2 x | -50 % |" in rows
    assert "| | no-op CPU | - | 5 CPU-s | new |" in rows  # the other series: no previous landing

def test_a_bad_record_is_refused_naming_the_file_and_field(tmp_path: Path) -> None:
    _write(tmp_path, "ok.json", "a" * 40, "2026-11-20T10:00:00Z", 1.0)
    data = json.loads((tmp_path / "ok.json").read_text())
    data["figures"]["no-op CPU"] = {"value": "fast"}
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(results_table.BadRecord, match=r"bad.json: figure 'no-op CPU' needs a numeric"):
        results_table.load(tmp_path)

def test_write_replaces_only_between_the_markers_and_check_finds_a_stale_copy(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    _write(results, "1.json", "a" * 40, "2026-11-20T10:00:00Z", 60.0)
    readme = tmp_path / "README.md"
    readme.write_text(f"# T\nbefore\n{results_table.BEGIN}\nold\n{results_table.END}\nafter\n")
    assert results_table.main(["--results", str(results), "--check", str(readme)]) == 1
    assert results_table.main(["--results", str(results), "--write", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("# T\nbefore\n") and text.endswith(f"{results_table.END}\nafter\n")
    assert "| | no-op CPU | - | 60 CPU-s | new |" in text and "old" not in text
    assert results_table.main(["--results", str(results), "--check", str(readme)]) == 0

def test_the_results_page_table_is_generated_from_the_committed_results() -> None:
    # `--check` without a file checks docs/results.md, where `--write` without a file writes
    for argv in (["--check"], ["--check", str(ROOT / "docs" / "results.md")]):
        script = ROOT / "tests" / "benchmarks" / "results_table.py"
        proc = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True,
                              check=False)
        assert proc.returncode == 0, proc.stderr
    assert results_table.BEGIN not in (ROOT / "README.md").read_text()  # the history left the README

@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "tests" / "benchmarks").glob("bench_*.py")))
def test_every_benchmark_takes_the_record_flag(script: str) -> None:
    text = (ROOT / "tests" / "benchmarks" / script).read_text()
    assert "take_record(" in text and ".write()" in text, f"{script}: no --json record"
