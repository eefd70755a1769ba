"""Snapshot file names, .sha256 lines and retention (ufcctl/domain/etcd/backup.py)."""

from __future__ import annotations

import pytest

from ufcctl.domain.etcd import backup


def test_file_names_sort_by_time_and_name_their_cluster() -> None:
    first, later = backup.file_name("core", 1_795_882_004), backup.file_name("core", 1_795_885_604)
    assert first == "core-20261128T160644Z.db"
    assert sorted([later, first]) == [first, later]
    assert backup.cluster_of(first) == "core"
    assert backup.cluster_of("events-20261128T160644Z.db") == "events"
    for other in ("core.db", "core-20261128T160644Z.db.sha256", ".core-20261128T160644Z.db.part", "x"):
        assert backup.cluster_of(other) is None, other


@pytest.mark.parametrize(("size", "ok"), [(4096 * 3 + 32, True), (512 + 32, True), (4096 * 3, False),
                                          (32, False), (4096 + 31, False)])
def test_a_trailer_follows_whole_pages(size: int, ok: bool) -> None:
    assert backup.has_trailer_size(size) is ok


def test_sum_lines_round_trip_in_sha256sum_format() -> None:
    digest = "ab" * 32
    line = backup.sum_line(digest, "core-1.db")
    assert line == f"{digest}  core-1.db\n"
    assert backup.parse_sum(line, "core-1.db") == digest
    assert backup.parse_sum(f"{digest.upper()} *core-1.db\n", "core-1.db") == digest  # binary mode mark
    assert backup.parse_sum(f"{digest}\n", "core-1.db") == digest  # a bare digest
    assert backup.parse_sum(f"{digest}  other.db\n", "core-1.db") is None
    assert backup.parse_sum("not a digest  core-1.db\n", "core-1.db") is None


def test_retention_keeps_the_newest_of_one_cluster_only() -> None:
    names = [backup.file_name("core", t) for t in (100, 4000, 8000, 12000)]
    names += [backup.file_name("pods", 50), "notes.txt", names[0] + ".sha256"]
    pruned = backup.retention(names, "core", 2)
    assert pruned.keep == tuple(sorted(names[2:4]))
    assert pruned.delete == tuple(sorted(names[0:2]))
    assert backup.retention(names, "core", 0).delete == ()  # 0: retention off
    assert backup.retention(names, "core", 10).delete == ()
