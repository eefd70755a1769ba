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
    # 4096-byte pages, the first one starting as bbolt's meta page does (magic 0xED0CDAED, version 2)
    body = bytes(16) + (0xED0CDAED).to_bytes(4, "little") + (2).to_bytes(4, "little")
    body = (body + bytes(range(256)) * (16 * pages))[: 4096 * pages]
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


class FakeNfsCp:
    """nfs_copy.copy as the timer calls it: copies into `store` (the URL's path under the server), or
    fails the way nfs-cp does."""

    def __init__(self, store: Path, fail_on: str = ""):
        self.store, self.fail_on, self.calls = store, fail_on, []

    def __call__(self, local: str, url: str, timeout: float) -> str:
        self.calls.append(["nfs-cp", local, url])
        assert url.startswith("nfs://10.0.0.5/srv/store/") and url.endswith("?version=3")
        if self.fail_on and url.split("?")[0].endswith(self.fail_on):
            return "nfs-cp exit 10: Failed to open nfs://...: NFS4ERR_ACCESS"
        target = self.store / url.split("?")[0].removeprefix("nfs://10.0.0.5/srv/store/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(Path(local).read_bytes())
        return ""


def test_the_timer_copies_each_snapshot_off_the_member_sum_file_last(tmp_path: Path) -> None:
    view = _view({"m1": _status("1", "2"), "m2": _status("2", "2")})
    client = FakeClient(FakeGateway(snapshot_bytes()), view)
    raw = {"cluster": "core", "member": "m1", "backup_dir": str(tmp_path / "b"),
           "textfile_dir": str(tmp_path), "offsite": "nfs://10.0.0.5/srv/store/"}
    nfs = FakeNfsCp(tmp_path / "server")
    lines: list[str] = []
    assert run_timer(raw, client, lines.append, clock=lambda: 1000.0, copier=nfs) == 0
    name = backup.file_name("core", 1000)
    assert [Path(c[2].split("?")[0]).name for c in nfs.calls] == [name, f"{name}.sha256"]  # the marker last
    copied = tmp_path / "server" / "core" / name
    assert copied.read_bytes() == (tmp_path / "b" / "core" / name).read_bytes()
    assert check(str(copied)).sum_file  # the copy passes what a restore checks, with its .sha256
    assert f"action=copied url=nfs://10.0.0.5/srv/store/core/{name}?version=3" in lines[-1]
    prom = (tmp_path / "ufcctl-etcd-backup-core.prom").read_text()
    assert 'ufcctl_etcd_backup_offsite_last_result{etcd_cluster="core",member="m1"} 1' in prom


def test_a_failed_copy_fails_the_run_keeps_the_snapshot_and_says_so(tmp_path: Path) -> None:
    view = _view({"m1": _status("1", "2"), "m2": _status("2", "2")})
    client = FakeClient(FakeGateway(snapshot_bytes()), view)
    raw = {"cluster": "core", "member": "m1", "backup_dir": str(tmp_path / "b"),
           "textfile_dir": str(tmp_path), "offsite": "nfs://10.0.0.5/srv/store"}
    nfs = FakeNfsCp(tmp_path / "server", fail_on=".sha256")
    lines: list[str] = []
    assert run_timer(raw, client, lines.append, clock=lambda: 1000.0, copier=nfs) == 1
    name = backup.file_name("core", 1000)
    assert (tmp_path / "b" / "core" / name).exists()  # kept on the member
    assert not (tmp_path / "server" / "core" / f"{name}.sha256").exists()  # no marker: not a whole copy
    assert "action=copy-failed" in lines[-1] and "nfs-cp exit 10: Failed to open" in lines[-1]
    prom = (tmp_path / "ufcctl-etcd-backup-core.prom").read_text()
    assert 'last_result{etcd_cluster="core",member="m1"} 1' in prom  # the snapshot itself is good
    assert 'offsite_last_result{etcd_cluster="core",member="m1"} 0' in prom


def test_no_store_configured_copies_nothing_and_reports_no_offsite_metric(tmp_path: Path) -> None:
    view = _view({"m1": _status("1", "2"), "m2": _status("2", "2")})
    raw = {"cluster": "core", "member": "m1", "backup_dir": str(tmp_path / "b"),
           "textfile_dir": str(tmp_path), "offsite": ""}
    nfs = FakeNfsCp(tmp_path / "server")
    assert run_timer(raw, FakeClient(FakeGateway(snapshot_bytes()), view), [].append, copier=nfs) == 0
    assert nfs.calls == [] and "offsite" not in (tmp_path / "ufcctl-etcd-backup-core.prom").read_text()


def test_nfs_copy_runs_nfs_cp_and_reports_its_last_line(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """ufcctl/nodeside/nfs_copy.py with a stand-in nfs-cp on PATH: "" when it succeeds, its last line
    and exit code when it fails, a clear line when it is not installed."""
    from ufcctl.nodeside import nfs_copy
    tool = tmp_path / "bin" / "nfs-cp"
    tool.parent.mkdir()
    tool.write_text('#!/bin/sh\ncase "$2" in *fail*) echo "Failed to mount nfs share" >&2; exit 10;; esac\n'
                    'echo "$1 $2" > "$(dirname "$0")/../copied"\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}:{os.environ['PATH']}")
    url = nfs_copy.nfs_url("nfs://10.0.0.5/srv/store/", "core", "a.db")
    assert url == "nfs://10.0.0.5/srv/store/core/a.db?version=3"
    assert nfs_copy.copy("/x/a.db", url, 5) == ""
    assert (tmp_path / "copied").read_text().split() == ["/x/a.db", url]
    assert nfs_copy.copy("/x/a.db", "nfs://h/fail", 5) == "nfs-cp exit 10: Failed to mount nfs share"
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert nfs_copy.copy("/x/a.db", url, 5).startswith("nfs-cp: ")
