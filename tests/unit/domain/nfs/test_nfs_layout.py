"""The dataset layout plan: parents first, implicit parents, modes and owners, bad entries named."""

from __future__ import annotations

import pytest

from ufcctl.domain.nfs.layout import LayoutDir, layout_problems, plan_layout


def test_seed_layout_parents_first_with_implicit_parents() -> None:
    entries = [
        {"path": "atlas_dls/output", "mode": "2775"},
        {"path": "atlas_dls/public/code", "mode": "755"},
        {"path": "atlas_dls/public/dataset", "mode": "0750", "owner": "root", "group": "data"},
    ]
    assert layout_problems(entries) == []
    assert plan_layout("/data", entries, "1000", "1000") == (
        LayoutDir("/data/atlas_dls", "0755", "1000", "1000"),  # implicit parent
        LayoutDir("/data/atlas_dls/output", "2775", "1000", "1000"),
        LayoutDir("/data/atlas_dls/public", "0755", "1000", "1000"),  # implicit parent
        LayoutDir("/data/atlas_dls/public/code", "0755", "1000", "1000"),
        LayoutDir("/data/atlas_dls/public/dataset", "0750", "root", "data"),
    )


def test_listed_parent_keeps_its_own_mode() -> None:
    plan = plan_layout("/x", [{"path": "a/b"}, {"path": "a", "mode": "0700"}], "u", "g")
    assert [(d.path, d.mode) for d in plan] == [("/x/a", "0700"), ("/x/a/b", "0755")]


@pytest.mark.parametrize(
    ("entries", "fragment"),
    [
        ([{"path": "/abs"}], "must be relative to the export"),
        ([{"path": "a/../b"}], "must be relative to the export"),
        ([{"path": "a//b"}], "must be relative to the export"),
        ([{"path": "a"}, {"path": "a/"}], "listed twice"),
        ([{"path": "a", "mode": 755}], "must be a quoted octal string"),
        ([{"path": "a", "mode": "0855"}], "must be a quoted octal string"),
        ([{"path": "a", "perm": "0755"}], "unknown keys ['perm']"),
        (["atlas_dls"], "must be a mapping with at least `path`"),
    ],
    ids=[
        "absolute",
        "dotdot",
        "double-slash",
        "duplicate",
        "unquoted-mode",
        "not-octal",
        "unknown-key",
        "bare-string",
    ],
)
def test_layout_problems(entries, fragment) -> None:
    problems = layout_problems(entries)
    assert len(problems) == 1 and fragment in problems[0], problems
