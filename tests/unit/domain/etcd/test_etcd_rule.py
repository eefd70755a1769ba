"""The defrag rule grammar: precedence, types, errors with columns, and no way out to Python."""

from __future__ import annotations

import pytest

from ufcctl.domain.etcd.rule import (
    DEFAULT_RULE,
    MAX_DEPTH,
    MAX_RULE_CHARS,
    VARIABLES,
    RuleError,
    parse_rule,
    rule_variables,
)

MiB = 1024 * 1024
GiB = 1024 * MiB

# quota 8 GiB; db 300 MiB of which 50 MiB in use -> 250 MiB free, usage 0.0366
SAMPLE = rule_variables(300 * MiB, 50 * MiB, 8 * GiB)


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        pytest.param(DEFAULT_RULE, True, id="default-free-over-200MiB"),
        pytest.param("dbSizeFree > 250*1024*1024", False, id="strictly-greater"),
        pytest.param("dbSizeFree >= 250*1024*1024", True, id="greater-or-equal"),
        pytest.param("dbQuotaUsage > 0.8", False, id="quota-usage"),
        pytest.param("dbSize - dbSizeInUse == dbSizeFree", True, id="free-is-size-minus-in-use"),
        pytest.param("dbQuota == 8*1024*1024*1024", True, id="quota"),
        pytest.param("1 + 2 * 3 == 7", True, id="mul-before-add"),
        pytest.param("(1 + 2) * 3 == 9", True, id="parentheses"),
        pytest.param("10 - 4 - 3 == 3", True, id="left-assoc-minus"),
        pytest.param("100 / 10 / 5 == 2", True, id="left-assoc-divide"),
        pytest.param("7 % 3 == 1", True, id="modulo"),
        pytest.param("-7 % 3 == -1", True, id="modulo-keeps-dividend-sign-like-go"),
        pytest.param("-(2 + 3) == -5", True, id="unary-minus"),
        pytest.param("+2 == 2", True, id="unary-plus"),
        pytest.param("true || false && false", True, id="and-binds-tighter-than-or"),
        pytest.param("!(true && false)", True, id="not"),
        pytest.param("!true == false", True, id="not-binds-tighter-than-equality"),
        pytest.param("1 < 2 == true", True, id="comparison-binds-tighter-than-equality"),
        pytest.param("1.5e2 == 150", True, id="exponent"),
        pytest.param(".5 == 0.5", True, id="leading-dot"),
        pytest.param("  dbSize>0&&dbSizeInUse>0  ", True, id="no-spaces-needed"),
        pytest.param("false && 1 / 0 > 1", False, id="and-short-circuits"),
        pytest.param("true || 1 % 0 > 1", True, id="or-short-circuits"),
        pytest.param("true != false", True, id="bool-inequality"),
    ],
)
def test_rule_evaluates(rule: str, expected: bool) -> None:
    assert parse_rule(rule).evaluate(SAMPLE) is expected


@pytest.mark.parametrize(
    ("rule", "message", "column"),
    [
        pytest.param("dbSize >", "ends too early", 9, id="truncated"),
        pytest.param("dbSize + 1", "must be a condition", None, id="number-not-bool"),
        pytest.param("dbsize > 1", "unknown variable 'dbsize'", 1, id="case-sensitive-variable"),
        pytest.param("(dbSize > 1", "missing ')'", 12, id="unclosed"),
        pytest.param("dbSize > 1)", "unexpected ')'", 11, id="extra-close"),
        pytest.param("dbSize > 1 > 2", "needs a number operand, got a bool", 12, id="chained-comparison"),
        pytest.param("!dbSize", "needs a bool operand", 1, id="not-on-number"),
        pytest.param("dbSize && true", "needs a bool operand, got a number", 8, id="and-on-number"),
        pytest.param("true == 1", "compares a bool with a number", 6, id="mixed-equality"),
        pytest.param("true + 1 > 0", "needs a number operand, got a bool", 6, id="arith-on-bool"),
        pytest.param("dbSize > 1 ; rm", "unexpected character ';'", 12, id="semicolon"),
        pytest.param('__import__("os")', "unexpected character", 12, id="no-calls"),
        pytest.param("dbSize.real > 0", "unexpected", 7, id="no-attributes"),
        pytest.param("dbSize = 1", "unexpected", 8, id="single-equals"),
        pytest.param("dbSize > 1 and true", "unexpected 'and'", 12, id="python-keywords-are-not-operators"),
        pytest.param("   ", "empty rule", None, id="blank"),
    ],
)
def test_rule_rejected_with_position(rule: str, message: str, column: int | None) -> None:
    with pytest.raises(RuleError) as info:
        parse_rule(rule)
    assert message in str(info.value)
    if column is not None:
        assert f"at column {column}" in str(info.value)


def test_division_by_zero_is_an_error_not_a_crash() -> None:
    rule = parse_rule("dbSize / dbSizeInUse > 2")
    with pytest.raises(RuleError, match="division by zero"):
        rule.evaluate(rule_variables(100, 0, 1000))


def test_missing_variables_are_named() -> None:
    with pytest.raises(RuleError, match="missing variables: dbQuota, dbQuotaUsage"):
        parse_rule("dbSize > 1").evaluate({"dbSize": 1, "dbSizeInUse": 1, "dbSizeFree": 0})


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param("(" * (MAX_DEPTH + 1) + "true" + ")" * (MAX_DEPTH + 1), "nested deeper", id="depth"),
        pytest.param("!" * (MAX_DEPTH + 1) + "true", "nested deeper", id="depth-unary"),
        pytest.param("true || " * 200 + "true", "longer than", id="length"),
    ],
)
def test_limits(text: str, error: str) -> None:
    with pytest.raises(RuleError, match=error):
        parse_rule(text)


def test_limits_allow_realistic_rules() -> None:
    text = "(" * (MAX_DEPTH - 1) + "true" + ")" * (MAX_DEPTH - 1)
    assert parse_rule(text).evaluate(SAMPLE) is True
    assert len(DEFAULT_RULE) < MAX_RULE_CHARS


@pytest.mark.parametrize(
    ("size", "in_use", "quota", "expected"),
    [
        pytest.param(300 * MiB, 50 * MiB, 8 * GiB, True, id="250MiB-free"),
        pytest.param(150 * MiB, 50 * MiB, 8 * GiB, False, id="100MiB-free-small-db"),
        pytest.param(7 * GiB, 7 * GiB, 8 * GiB, True, id="87pct-of-quota-no-free-space"),
        pytest.param(200 * MiB + 1, 0, 8 * GiB, True, id="just-over-200MiB"),
        pytest.param(200 * MiB, 0, 8 * GiB, False, id="exactly-200MiB"),
    ],
)
def test_default_rule_matches_the_issue(size: int, in_use: int, quota: int, expected: bool) -> None:
    """Default: free bytes > 200 MiB or dbSize > 80% of quota."""
    assert parse_rule(DEFAULT_RULE).evaluate(rule_variables(size, in_use, quota)) is expected


def test_rule_variables_are_the_five_documented() -> None:
    values = rule_variables(400, 100, 1000)
    assert tuple(values) == VARIABLES
    assert values == {
        "dbSize": 400.0,
        "dbSizeInUse": 100.0,
        "dbSizeFree": 300.0,
        "dbQuota": 1000.0,
        "dbQuotaUsage": 0.4,
    }
