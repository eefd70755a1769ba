"""Left from round three and found beside round four (issue 42): bad input that was an internal error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.unit.cli.test_etcd_cli import _inventory
from ufcctl.cli.main import cli

ROOT = Path(__file__).resolve().parents[3]


def test_a_state_dir_past_name_max_is_bad_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["runs"], env={"UFC_STATE_DIR": str(tmp_path / ("s" * 300))})
    assert result.exit_code == 2, result.output
    assert "UFC_STATE_DIR: " in result.output and "a name of 300 bytes" in result.output


def test_a_damaged_ca_is_named_not_an_internal_error(tmp_path: Path) -> None:
    inv = _inventory(tmp_path)
    (tmp_path / "pki" / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nnot base64\n")
    result = CliRunner().invoke(cli, ["etcd", "member", "replace", "-i", str(inv), "--cluster", "core",
                                      "--member", "m2"])
    assert "internal error" not in result.output
    assert result.exit_code == 2 and "cannot load ufcctl's CA or client certificate" in result.output


def test_a_closed_stdin_at_resets_question_resets_nothing(tmp_path: Path) -> None:
    inv = _inventory(tmp_path, with_pki=False)
    env = {"PATH": "/usr/bin:/bin", "UFC_STATE_DIR": str(tmp_path / "state"), "PYTHONPATH": str(ROOT)}
    code = ("import os, sys; os.close(0); "
            f"sys.argv = ['ufcctl', 'reset', '-i', {str(inv)!r}]; from ufcctl.cli.main import main; main()")
    eof = subprocess.run([sys.executable, "-c", code.replace("os.close(0); ", "")], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    closed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            cwd=tmp_path, env=env)
    for run in (eof, closed):
        assert run.returncode == 2, run.stderr
        assert "internal error" not in run.stderr and "is not the inventory's name" in run.stderr


@pytest.mark.parametrize("errno_name", ["ENOSPC"])
def test_a_full_disk_here_is_not_the_members_failure(tmp_path: Path, monkeypatch, errno_name: str) -> None:
    import errno
    import io

    from tests.unit.nodeside.test_etcd_backup import FakeClient, FakeGateway, snapshot_bytes
    from ufcctl.nodeside import etcd_backup
    from ufcctl.nodeside.etcd_backup import SnapshotError, take

    class Full(io.BytesIO):
        def write(self, data):  # type: ignore[override]
            raise OSError(getattr(errno, errno_name), "No space left on device")

    class Streamed(FakeGateway):
        def snapshot(self, write):  # the real gateway turns its stream's OSErrors into EtcdError
            from ufcctl.engine.etcd_client import EtcdError
            try:
                return super().snapshot(write)
            except OSError as err:
                raise EtcdError("https://m1:2379", f"{type(err).__name__}: {err}") from None

    real = etcd_backup.atomic_file

    def full(path, mode=0o644, *, replace=True):
        from contextlib import contextmanager

        @contextmanager
        def opened():
            with real(path, mode, replace=replace):
                yield Full()
        return opened()

    monkeypatch.setattr(etcd_backup, "atomic_file", full)
    with pytest.raises(SnapshotError) as caught:
        take(FakeClient(Streamed(snapshot_bytes())), "https://m1:2379", "m1", str(tmp_path / "core"), "core")
    assert "on this machine failed" in str(caught.value) and "m1 is not at fault" in str(caught.value)
