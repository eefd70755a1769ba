"""The one parameter type of every numeric flag: finite, within bounds, or exit 2 naming the flag.

click.FloatRange lets `nan` through (every comparison with nan is false, so no bound fails) and
`inf` through when there is no upper bound; both then crash deep inside (int(nan)). Using this type
for every numeric flag fixes the class at once; tests/unit/cli/test_number_flags.py walks every
command and checks that each numeric flag uses it and refuses nan, inf and out-of-range values.
"""

from __future__ import annotations

import math
from typing import Any

import click

from ufcctl.domain.rollout.budget import BudgetError, parse_percent
from ufcctl.errors import shown

# Upper bounds of the flags that had none: a finite but huge value (1e308, 10**4000) used to pass and
# overflow later (a socket timeout, a datetime, a projected duration). Each is far past real use.
MAX_SECONDS = 86_400.0  # a timeout or one node's time: a day
MAX_NODE_TIMEOUT = 7 * 86_400  # a node declared hung after a week at most
MAX_COUNT = 10_000  # canaries, workers started per second, nodes per super pod (like --batch)


class Number(click.ParamType):
    """An int or float flag value in [low, high] (None: unbounded); nan and inf are never valid."""

    def __init__(self, kind: type[int] | type[float], low: float | None = None, high: float | None = None):
        self.kind = kind
        self.low = low
        self.high = high
        self.name = "integer" if kind is int else "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, bool) or value is None:
            self.fail(f"{shown(value)} is not {self._expected()}", param, ctx)
        try:
            number = float(value) if self.kind is float else _integer(value)
        except (TypeError, ValueError):
            self.fail(f"{shown(value)} is not {self._expected()}", param, ctx)
        if not math.isfinite(number) or (self.low is not None and number < self.low) or (
                self.high is not None and number > self.high):
            self.fail(f"{shown(value)} is not {self._expected()}", param, ctx)
        return number

    def _expected(self) -> str:
        what = "an integer" if self.kind is int else "a finite number"
        if self.low is not None and self.high is not None:
            return f"{what} from {self.low:g} to {self.high:g}"
        if self.low is not None:
            return f"{what} of at least {self.low:g}"
        if self.high is not None:
            return f"{what} of at most {self.high:g}"
        return what

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "INTEGER" if self.kind is int else "NUMBER"

    def __repr__(self) -> str:
        return f"Number({self.kind.__name__}, {self.low}, {self.high})"


def _integer(value: Any) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(value)
        return int(value)
    return int(str(value).strip(), 10)


def integer(low: int | None = None, high: int | None = None) -> Number:
    return Number(int, low, high)


def number(low: float | None = None, high: float | None = None) -> Number:
    return Number(float, low, high)


class Percent(click.ParamType):
    """A share such as 5%, 5 or 2.5% (domain/rollout/budget.py parses it): 0 to 100, never nan."""

    name = "percent"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float):
            value = f"{value:g}"
        try:
            return parse_percent(str(value))
        except BudgetError as err:
            self.fail(str(err), param, ctx)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "PERCENT"


def percent() -> Percent:
    return Percent()
