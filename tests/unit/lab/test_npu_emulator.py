"""The lab NPU emulator's packages and npu-smi output, and the role's parsing of that output."""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # the emulators (lab/) are imported from the repository root
    sys.path.insert(0, str(ROOT))

from tests.lab_standins.npu_emulator import npu_smi  # noqa: E402
from tests.lab_standins.npu_emulator.packages import CHECKSUM_FILE, RELEASES, Release, build  # noqa: E402

# The same pattern as chips() in roles/ascend_driver/library/ufc_ascend_driver.py (checked below).
CHIP_ROW = r"(?m)^\|\s+(\d+)\s+\S+\s+\|\s+(\w+)\s+\|"


def test_packages_have_the_real_names_and_a_matching_checksum_file(tmp_path: Path) -> None:
    sums = build(tmp_path, [Release("24.1.rc3", "7.5.0.2.220", chip="910b", arch="aarch64")])
    assert sorted(sums) == ["Ascend-hdk-910b-npu-driver_24.1.rc3_linux-aarch64.run",
                            "Ascend-hdk-910b-npu-firmware_7.5.0.2.220.run"]
    listed = dict(reversed(line.split("  ")) for line in (tmp_path / CHECKSUM_FILE).read_text().splitlines())
    for name, digest in sums.items():
        assert hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() == digest == listed[name]
        text = (tmp_path / name).read_text()
        assert "NOT a Huawei package" in text and "@VERSION@" not in text


def test_releases_differ() -> None:
    assert RELEASES[0].driver != RELEASES[1].driver and RELEASES[0].firmware != RELEASES[1].firmware


def _info(chips: int, bad: set[int]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        npu_smi.info(chips, "910B3", bad, "24.1.rc3")
    return out.getvalue()


@pytest.mark.parametrize(
    ("chips", "bad"), [(8, set()), (16, {3, 15}), (1, {0})], ids=["8-ok", "16-two-bad", "1-bad"]
)
def test_role_pattern_reads_every_chip_and_its_health(chips: int, bad: set[int]) -> None:
    rows = re.findall(CHIP_ROW, _info(chips, bad))
    assert [int(i) for i, _ in rows] == list(range(chips))
    assert {int(i) for i, health in rows if health != "OK"} == bad
    assert "Version: 24.1.rc3" in _info(chips, bad)


def test_role_uses_the_same_pattern() -> None:
    module = (ROOT / "roles" / "ascend_driver" / "library" / "ufc_ascend_driver.py").read_text()
    assert f're.findall(r"{CHIP_ROW}", info)' in module


def test_rebuilding_leaves_identical_packages_alone(tmp_path: Path) -> None:
    """`ufcctl lab up` rebuilds into the directory a running mirror serves: unchanged files stay."""
    build(tmp_path, list(RELEASES))
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    build(tmp_path, list(RELEASES))
    assert {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in tmp_path.iterdir()} == before
    assert all(p.stat().st_mode & 0o777 in (0o755, 0o644) for p in tmp_path.iterdir())


def test_setup_refuses_a_label_without_a_value() -> None:
    from tests.lab_standins.npu_emulator.__main__ import main

    with pytest.raises(SystemExit) as exc:
        main(["setup", "--label", "ufcctl.lab", "--json"])
    assert exc.value.code == 2
