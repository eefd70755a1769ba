"""ufcctl.errors.shown and cut: the one place error messages bound the values they quote."""

from __future__ import annotations

import pytest

from ufcctl.errors import QUOTE_LIMIT, cut, cut_quoted, shown


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("10.0.0.1", "'10.0.0.1'", id="short string"),
        pytest.param(22, "22", id="int"),
        pytest.param("a" * 100, "'" + "a" * (QUOTE_LIMIT - 1) + "…'", id="long string"),
        pytest.param(10**5000, "an integer of about 5,001 digits", id="int past int()'s digit limit"),
        pytest.param(list(range(1000)), "a list of 1,000 items", id="long list"),
        pytest.param([10**5000], "a list", id="huge int inside a list"),
        pytest.param(1e308, "1e+308", id="huge float"),
    ],
)
def test_shown(value: object, expected: str) -> None:
    assert shown(value) == expected


def test_a_cut_value_keeps_the_rest_of_its_message() -> None:
    """An open quote left by the cut paired with the message's next quote, and cut_quoted then cut the words
    between them (issue 42: "kube_node_labels key 'kkk…'/', then at most 63 ...")."""
    message = f"key {shown('k' * 300)} is not a label key (a DNS prefix and '/', then a name)"
    assert cut_quoted(message) == message and "is not a label key (a DNS prefix" in message


def test_cut() -> None:
    assert cut("10.0.0.1") == "10.0.0.1"
    assert cut("x" * 500, 10) == "x" * 10 + "…"
