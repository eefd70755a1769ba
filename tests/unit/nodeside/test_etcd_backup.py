"""The snapshot program (ufcctl/nodeside/etcd_backup.py): streaming into a checked file, the checks a
restore relies on, retention, which member takes the snapshot, and the timer's run. The gateway is a
fake here; tests/integration/test_etcd_lab.py takes and restores real snapshots on the lab."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ufcctl.domain.etcd import backup
from ufcctl.domain.etcd.defrag import ClusterView, Member, MemberStatus
from ufcctl.engine.etcd_client import EtcdError
from ufcctl.nodeside import etcd_backup
from ufcctl.nodeside.etcd_backup import SnapshotError, check, prune, run_timer, take, taker


def snapshot_bytes(pages: int = 3) -> bytes:
    body = bytes(range(256)) * (16 * pages)  # 4096-byte pages
    return body + hashlib.sha256(body).digest()


class FakeGateway:
    def __init__(self, data: bytes, chunk: int = 1000, fail_after: int | None = None):
        self.data, self.chunk, self.fail_after = data, chunk, fail_after

    def snapshot(self, write: Callable[[bytes], None]) -> int:
        for at in range(0, len(self.data), self.chunk):
            if self.fail_after is not None and at >= self.fail_after:
                raise EtcdError("https://m1:2379", "connection reset")
            write(self.data[at:at + self.chunk])
        return len(self.data)


class FakeClient:
    def __init__(self, gateway: FakeGateway, view: ClusterView | None = None):
        self._gateway, self._view = gateway, view
        self.endpoints = ["https://m1:2379"]

    def gateway(self, endpoint: str) -> FakeGateway:
        return self._gateway

    def view(self, with_last: bool = True) -> ClusterView:
        assert self._view is not None
        return self._view


def test_take_writes_a_private_checked_file_and_its_sum(tmp_path: Path) -> None:
    data = snapshot_bytes()
    snap = take(FakeClient(FakeGateway(data)), "https://m1:2379", "m1", str(tmp_path / "core"), "core",
                clock=lambda: 1_795_882_004.0)
    path = Path(snap.path)
    assert path.name == "core-20261128T160644Z.db" and path.read_bytes() == data
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    assert snap.sha256 == hashlib.sha256(data).hexdigest() and snap.size == len(data)
    assert (tmp_path / "core" / f"{path.name}.sha256").read_text() == f"{snap.sha256}  {path.name}\n"
    assert check(snap.path).sum_file is True


@pytest.mark.parametrize("damage", ["trailer", "torn"])
def test_take_keeps_nothing_of_a_bad_or_broken_stream(tmp_path: Path, damage: str) -> None:
    data = snapshot_bytes()
    gateway = FakeGateway(data[:-1] + b"\0") if damage == "trailer" else FakeGateway(data, fail_after=4000)
    with pytest.raises(SnapshotError) as err:
        take(FakeClient(gateway), "https://m1:2379", "m1", str(tmp_path), "core")
    assert ("fails etcd's sha256 trailer" if damage == "trailer" else "connection reset") in str(err.value)
    assert os.listdir(tmp_path) == []  # no .part, no snapshot, no .sha256


def _file(tmp_path: Path, data: bytes, name: str = "core-20261128T160644Z.db") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_check_refuses_what_etcd_restore_refuses(tmp_path: Path) -> None:
    data = snapshot_bytes()
    assert check(str(_file(tmp_path, data))).sum_file is False  # no .sha256: the trailer alone
    corrupt = bytearray(data)
    corrupt[100] ^= 1
    with pytest.raises(SnapshotError, match="fails etcd's sha256 trailer"):
        check(str(_file(tmp_path, bytes(corrupt))))
    with pytest.raises(SnapshotError, match="not an etcd snapshot with a sha256 trailer"):
        check(str(_file(tmp_path, data[:-32])))  # a raw member/snap/db
    with pytest.raises(SnapshotError, match="cannot read"):
        check(str(tmp_path / "missing.db"))


def test_check_compares_the_sum_file_beside_it(tmp_path: Path) -> None:
    path = _file(tmp_path, snapshot_bytes())
    (tmp_path / f"{path.name}.sha256").write_text(f"{'0' * 64}  {path.name}\n")
    with pytest.raises(SnapshotError, match="differs from"):
        check(str(path))
    (tmp_path / f"{path.name}.sha256").write_text(f"{'0' * 64}  other.db\n")
    with pytest.raises(SnapshotError, match="no sha256 for"):
        check(str(path))


def test_prune_keeps_the_newest_and_removes_stale_parts(tmp_path: Path) -> None:
    names = [backup.file_name("core", t) for t in (1000, 5000, 9000)]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
        (tmp_path / f"{name}.sha256").write_text("x")
    (tmp_path / backup.file_name("pods", 1)).write_bytes(b"x")
    stale, fresh = tmp_path / ".core-1.db.part", tmp_path / ".core-2.db.part"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    os.utime(stale, (time.time() - 7 * 3600, time.time() - 7 * 3600))
    gone = prune(str(tmp_path), "core", 1)
    assert sorted(gone) == sorted([*names[:2], stale.name])
    assert sorted(os.listdir(tmp_path)) == sorted([names[2], f"{names[2]}.sha256", fresh.name,
                                                   backup.file_name("pods", 1)])


def _status(member_id: str, leader: str, errors: tuple[str, ...] = ()) -> MemberStatus:
    return MemberStatus(member_id, leader, 1, 1, 1, 1, 1, errors=errors)


def _view(statuses: dict[str, MemberStatus]) -> ClusterView:
    members = tuple(Member(s.member_id, name, (f"https://{name}:2380",), (f"https://{name}:2379",))
                    for name, s in statuses.items())
    return ClusterView("core", members, statuses, {}, (), {})


def test_taker_is_the_first_healthy_follower_else_the_leader_else_nobody() -> None:
    three = {"m3": _status("3", "3"), "m2": _status("2", "3"), "m1": _status("1", "3", ("corrupt",))}
    assert taker(_view(three)) == "m2"  # m1 unhealthy, m3 leads
    assert taker(_view({"m1": _status("1", "1")})) == "m1"  # alone: the leader
    assert taker(_view({"m1": _status("1", "0"), "m2": _status("2", "0")})) is None  # no quorum
    assert taker(_view({})) is None


def test_the_timer_run_of_the_taker_snapshots_prunes_and_writes_metrics(tmp_path: Path) -> None:
    view = _view({"m1": _status("1", "2"), "m2": _status("2", "2")})
    client = FakeClient(FakeGateway(snapshot_bytes()), view)
    raw = {"cluster": "core", "member": "m1", "backup_dir": str(tmp_path / "b"), "backup_keep": 1,
           "textfile_dir": str(tmp_path)}
    lines: list[str] = []
    clock = iter([1000.0, 1000.0, 9000.0, 9000.0])
    assert run_timer(raw, client, lines.append, clock=lambda: next(clock)) == 0
    assert run_timer(raw, client, lines.append, clock=lambda: next(clock)) == 0
    newest = backup.file_name("core", 9000)  # keep 1: the first run's snapshot is gone
    assert sorted(os.listdir(tmp_path / "b" / "core")) == [newest, f"{newest}.sha256"]
    prom = (tmp_path / "ufcctl-etcd-backup-core.prom").read_text()
    assert 'ufcctl_etcd_backup_last_result{etcd_cluster="core",member="m1"} 1' in prom
    assert 'ufcctl_etcd_backup_last_success_timestamp_seconds{etcd_cluster="core",member="m1"} 9000' in prom
    size = len(snapshot_bytes())
    assert f'ufcctl_etcd_backup_last_size_bytes{{etcd_cluster="core",member="m1"}} {size}' in prom


def test_the_timer_run_of_another_member_takes_nothing_and_a_failure_keeps_the_last_success(
        tmp_path: Path) -> None:
    view = _view({"m1": _status("1", "2"), "m2": _status("2", "2")})
    raw = {"cluster": "core", "member": "m2", "backup_dir": str(tmp_path / "b"),
           "textfile_dir": str(tmp_path)}
    lines: list[str] = []
    assert run_timer(raw, FakeClient(FakeGateway(snapshot_bytes()), view), lines.append) == 0
    assert not (tmp_path / "b").exists() and "member m1 takes this run's snapshot" in lines[-1]
    raw["member"] = "m1"
    (tmp_path / "ufcctl-etcd-backup-core.prom").write_text(
        'ufcctl_etcd_backup_last_success_timestamp_seconds{etcd_cluster="core",member="m1"} 500\n')
    broken = FakeClient(FakeGateway(snapshot_bytes(), fail_after=0), view)
    assert run_timer(raw, broken, lines.append, clock=lambda: 800.0) == 1
    prom = (tmp_path / "ufcctl-etcd-backup-core.prom").read_text()
    assert 'last_result{etcd_cluster="core",member="m1"} 0' in prom
    assert "last_success_timestamp_seconds" in prom
    assert 'member="m1"} 500' in prom and "last_size_bytes" not in prom


def test_main_refuses_a_bad_config_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "core.json"
    config.write_text('{"cluster": "core"}')
    assert etcd_backup.main(["--config", str(config)]) == 2
    assert "bad config: KeyError" in capsys.readouterr().err
