"""Tables for people that stay readable in an 80-column terminal or pipe: wrapped, never cut with `…`."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

WIDE = 10_000  # a width no table reaches: measures a table's natural width


def share_widths(minimums: Sequence[int], maximums: Sequence[int], available: int) -> list[int]:
    """Column widths that fit `available`: unwrapped if possible, else wrapped between words, else folded.

    `minimums` are each column's longest word, `maximums` its longest line. When even the longest
    words do not fit, only the columns with the longest words are cut down, to one common level, so
    that short columns (counts, states) keep whole words and long ones (host names) fold.
    """
    if sum(maximums) <= available:
        return list(maximums)
    if sum(minimums) <= available:
        widths = list(minimums)
        spare = available - sum(minimums)
        slack = [high - low for low, high in zip(minimums, maximums, strict=True)]
        total = sum(slack)
        for index, room in enumerate(slack):
            widths[index] += room * spare // total
        return _give(widths, maximums, available - sum(widths))
    level = max(minimums)
    while level > 1 and sum(min(low, level) for low in minimums) > available:
        level -= 1
    widths = [min(low, level) for low in minimums]
    return _give(widths, minimums, available - sum(widths))


def _give(widths: list[int], limits: Sequence[int], spare: int) -> list[int]:
    """Hand out what rounding left over, a column each, to columns below their limit."""
    for index, limit in enumerate(limits):
        if spare > 0 and widths[index] < limit:
            widths[index] += 1
            spare -= 1
    return widths


class Fitted:
    """A rich Table whose column widths `share_widths` chooses at render time, for the console's width.

    The title is a line of its own above the table: a Table wraps its title to the table's width,
    which cut "lab status" into "lab s/tatus" above a narrow table.
    """

    def __init__(self, table: Table, title: str = "", whole: Sequence[str] = ()):
        self.table = table
        self.title = title
        self.whole = frozenset(whole)  # headers of columns never wrapped or cut (ids a user copies)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.table)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.title:
            yield Text(self.title, style="bold")
        yield self.fit(console, options)

    def fit(self, console: Console, options: ConsoleOptions) -> Table:
        table = self.table
        wide = options.update_width(WIDE)
        # Content widths (without padding) of each column: header and cells, longest word and line.
        ranges = [
            [Measurement.get(console, wide, cell) for cell in (column.header, *column.cells)]
            for column in table.columns
        ]
        minimums = [max(r.minimum for r in column) for column in ranges]
        maximums = [max(r.maximum for r in column) for column in ranges]
        overhead = Measurement.get(console, wide, table).maximum - sum(maximums)
        kept = [str(column.header) in self.whole for column in table.columns]
        fixed = sum(high for high, keep in zip(maximums, kept, strict=True) if keep)
        shared = iter(share_widths([low for low, keep in zip(minimums, kept, strict=True) if not keep],
                                   [high for high, keep in zip(maximums, kept, strict=True) if not keep],
                                   options.max_width - overhead - fixed))
        widths = [high if keep else next(shared) for high, keep in zip(maximums, kept, strict=True)]
        fitted = copy.copy(table)
        fitted.columns = [
            dataclasses.replace(column, width=max(width, 1))
            for column, width in zip(table.columns, widths, strict=True)
        ]
        return fitted


def new_table(columns: Sequence[str]) -> Table:
    """An empty table with our look: bold headers, a rule under them, no borders between columns."""
    table = Table(
        header_style="bold", box=box.SIMPLE_HEAD,
        show_edge=False, pad_edge=False, collapse_padding=True,
    )
    for column in columns:
        # fold, not the default ellipsis: a host name too long for its column wraps instead of losing its tail
        table.add_column(column, overflow="fold")
    return table


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str = "") -> Fitted:
    """A table of these rows (cells rendered with str, rich markup allowed), fitted at render time."""
    result = new_table(columns)
    for row in rows:
        result.add_row(*(str(cell) for cell in row))
    return Fitted(result, title)
