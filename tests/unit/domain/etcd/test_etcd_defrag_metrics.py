"""The defrag agent's textfile gauges: labels, timestamps carried across runs, valid text format."""

from __future__ import annotations

import re

import pytest

from ufcctl.domain.etcd.defrag_metrics import (
    LAST_DURATION,
    LAST_RESULT,
    LAST_RUN,
    LAST_SUCCESS,
    escape_label_value,
    file_name,
    parse_samples,
    previous_success,
    render,
)

# a sample line of the text format: name, {labels} with escaped values, a float value
SAMPLE_LINE = re.compile(
    r'^[a-zA-Z_:][a-zA-Z0-9_:]*\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\} '
    r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|NaN|Inf)$"
)
LABELS = 'etcd_cluster="core",member="cp1"'


def _check_format(text: str) -> None:
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        assert SAMPLE_LINE.match(line), line
    for name in (LAST_RUN, LAST_SUCCESS, LAST_DURATION, LAST_RESULT):
        assert f"# TYPE {name} gauge" in text.splitlines()
        assert any(line.startswith(f"# HELP {name} ") for line in text.splitlines())


def test_success_sets_every_gauge() -> None:
    text = render("core", "cp1", 1_700_000_000.25, 12.3456, True, None)
    _check_format(text)
    assert parse_samples(text) == {
        LAST_RUN: (LABELS, 1_700_000_000.25),
        LAST_SUCCESS: (LABELS, 1_700_000_000.25),
        LAST_DURATION: (LABELS, 12.346),
        LAST_RESULT: (LABELS, 1.0),
    }
    assert file_name("core") == "ufcctl-etcd-defrag-core.prom"


def test_failure_keeps_the_previous_success() -> None:
    first = render("core", "cp1", 1000.0, 1.0, True, None)
    failed = render("core", "cp1", 2000.0, 5.0, False, first)
    _check_format(failed)
    samples = parse_samples(failed)
    assert samples[LAST_RUN][1] == 2000.0 and samples[LAST_RESULT][1] == 0.0
    assert samples[LAST_SUCCESS][1] == 1000.0
    # and again after a second failure, then a success moves it
    again = render("core", "cp1", 3000.0, 5.0, False, failed)
    assert parse_samples(again)[LAST_SUCCESS][1] == 1000.0
    ok = render("core", "cp1", 4000.0, 5.0, True, again)
    assert parse_samples(ok)[LAST_SUCCESS][1] == 4000.0


@pytest.mark.parametrize("previous", [None, "", "garbage\n", f"{LAST_SUCCESS}{{}} NaN\n"])
def test_never_succeeded_omits_the_success_sample(previous: str | None) -> None:
    """No sample rather than 0: `time() - 0` would fire EtcdDefragOverdue on a new member at once."""
    text = render("core", "cp1", 1000.0, 1.0, False, previous)
    _check_format(text)
    assert LAST_SUCCESS not in parse_samples(text)
    assert f"# TYPE {LAST_SUCCESS} gauge" in text
    assert previous_success(text) is None
    # a failed run after that still has none
    assert LAST_SUCCESS not in parse_samples(render("core", "cp1", 2000.0, 1.0, False, text))


def test_label_values_are_escaped() -> None:
    assert escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    text = render('we"ird\\', "cp\n1", 1000.0, 0.5, True, None)
    _check_format(text)
    assert parse_samples(text)[LAST_RESULT][0] == 'etcd_cluster="we\\"ird\\\\",member="cp\\n1"'
    # one line per sample despite the newline in a label value
    assert sum(not line.startswith("#") for line in text.splitlines()) == 4


def test_parse_samples_rejects_a_broken_line() -> None:
    with pytest.raises(ValueError, match="not a sample line"):
        parse_samples(f"{LAST_RESULT}{{{LABELS}}}\n")
