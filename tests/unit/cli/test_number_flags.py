"""Every numeric flag of every command: one shared type, and nan, inf or out of range exit 2 naming it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ufcctl.cli.main import cli
from ufcctl.cli.numbers import Number, Percent

SAMPLE = Path(__file__).resolve().parents[3] / "inventories" / "sample"
RAW_NUMERIC = (click.types.IntParamType, click.types.FloatParamType)  # IntRange/FloatRange included


def _commands(group: click.Group,
              path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _numeric_options() -> list[tuple[tuple[str, ...], click.Option]]:
    return [(path, p) for path, command in _commands(cli) for p in command.params
            if isinstance(p, click.Option) and isinstance(p.type, (Number, Percent))]


def _bad_values(option: click.Option) -> list[str]:
    # 1e308 and 5,000 digits: finite but huge (no overflow later), past int()'s 4,300-digit limit
    values = ["nan", "inf", "-inf", "1e999", "twelve", "1e308", "9" * 5000]
    if isinstance(option.type, Percent):
        return [*values, "-1", "101"]
    kind = option.type
    assert isinstance(kind, Number)
    if kind.low is not None:
        values.append(str(kind.low - 1))
    if kind.high is not None:
        values.append(str(kind.high + 1))
    if kind.kind is int:
        values.append("1.5")
    return values


def test_no_command_uses_a_raw_click_number_type() -> None:
    raw = [f"{' '.join(path)} {p.opts[0]}" for path, command in _commands(cli) for p in command.params
           if isinstance(p.type, RAW_NUMERIC) and not getattr(p, "count", False)]  # -vvv counts, no value
    assert raw == [], "use ufcctl.cli.numbers.integer()/number() (click.FloatRange lets nan through)"


def test_every_numeric_flag_has_an_upper_bound() -> None:
    unbounded = [f"{' '.join(path)} {p.opts[0]}" for path, p in _numeric_options()
                 if isinstance(p.type, Number) and p.type.high is None]
    assert unbounded == [], "a huge finite value (1e308) passes an unbounded flag and overflows later"


def test_the_walk_finds_the_numeric_flags() -> None:
    found = {f"{' '.join(path)} {p.opts[0]}" for path, p in _numeric_options()}
    assert {"plan upgrade-drivers --node-seconds", "upgrade-drivers --batch", "upgrade-drivers --max-fail",
            "deploy --forks", "runs --last", "lab up --nodes", "placement validate --super-pod-size"} <= found


@pytest.mark.parametrize(("path", "option"), _numeric_options(),
                         ids=[f"{' '.join(p)} {o.opts[0]}" for p, o in _numeric_options()])
def test_bad_numbers_exit_2_naming_the_flag(path: tuple[str, ...], option: click.Option) -> None:
    flag = max(option.opts, key=len)
    for value in _bad_values(option):
        # the flag comes first: click checks values in command-line order, so no other flag is needed
        result = CliRunner().invoke(cli, [*path, flag, value])
        assert result.exit_code == 2, (value, result.output)
        assert f"Invalid value for '{flag}'" in result.output or f"/ '{flag}'" in result.output, (value,
                                                                                                 result.output)
        assert "Traceback" not in result.output
        assert len(result.output) < 1000, result.output[:300]  # the value is quoted cut short


def test_plan_with_nan_node_seconds_exits_2_instead_of_crashing() -> None:
    result = CliRunner().invoke(cli, ["plan", "upgrade-drivers", "-i", str(SAMPLE), "--batch", "10",
                                      "--node-seconds", "nan"])
    assert result.exit_code == 2
    message = "Invalid value for '--node-seconds': 'nan' is not a finite number from 0.001 to 86400"
    assert message in result.output


@pytest.mark.parametrize(("value", "expected"), [("600", 600.0), ("0.5", 0.5), ("1e3", 1000.0)])
def test_good_numbers_still_work(value: str, expected: float) -> None:
    assert Number(float, 0.001).convert(value, None, None) == expected
    assert Number(int, 1, 10).convert("7", None, None) == 7
