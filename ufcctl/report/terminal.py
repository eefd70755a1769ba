"""The one sanitizer of text a user's terminal gets, and where it is applied.

A snapshot's pod names, an inventory's values, a registry's answer or a state file's rows can hold
control characters: OSC 0 retitles the terminal, OSC 52 writes the clipboard, a carriage return or a
bidi override hides what follows. Every such character is shown escaped (`\\x1b`, `\\u202e`), never
sent. Applied twice, both times with `for_terminal`:
- `sanitized_streams()`: sys.stdout and sys.stderr for the life of a command (cli/main.py), so every
  click.echo, print and `Error:` line passes through it;
- `TerminalConsole`: rich writes its own styles and cursor moves to the real stream, so it escapes the
  text it is given before it measures and styles it, and never interprets markup in it (a state name
  or ToR id like `[/x]` would crash rich with MarkupError, `[blink]` would style the line); and every
  segment it renders, whatever built it (a `Text` of data, a table title, a progress column), is
  escaped again on its way out, rich's own cursor moves and styles aside.
Progress columns that show data are `data_column`s: plain text, never markup.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from rich.console import Console, ConsoleOptions, RenderableType
from rich.progress import Task, TextColumn
from rich.segment import Segment
from rich.text import Text

# C0 but newline and tab, DEL, C1; and the bidi embeddings, overrides and isolates
_CONTROLS = [*(c for c in range(0x20) if c not in (0x09, 0x0A)), 0x7F, *range(0x80, 0xA0)]
_TABLE = {c: f"\\x{c:02x}" for c in _CONTROLS}
_TABLE.update({c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))})


_ANY_CONTROL = re.compile("[" + "".join(chr(c) for c in _TABLE) + "]")


def for_terminal(text: str) -> str:
    """`text` with every control character shown escaped."""
    return text.translate(_TABLE)


class SanitizedStream(io.TextIOBase):
    """A text stream that writes `for_terminal` of everything to the stream it wraps."""

    def __init__(self, raw: TextIO):
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(for_terminal(text))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.raw, "errors", None)

    def writable(self) -> bool:
        return True


def raw_stream(stream: Any) -> Any:
    """The stream under a SanitizedStream (rich writes its escape sequences there)."""
    return stream.raw if isinstance(stream, SanitizedStream) else stream


@contextmanager
def sanitized_streams() -> Iterator[None]:
    """sys.stdout and sys.stderr through for_terminal while the block runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SanitizedStream(raw_stream(saved[0])), SanitizedStream(raw_stream(saved[1]))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


class TerminalConsole(Console):
    """rich's Console that escapes control characters in the text it is given and interprets no markup
    in it (styles come from Text and style= arguments, never from data)."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("markup", False)
        kwargs.setdefault("highlight", False)
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def file(self) -> Any:
        return raw_stream(Console.file.fget(self))  # type: ignore[attr-defined]

    @file.setter
    def file(self, new_file: Any) -> None:
        Console.file.fset(self, new_file)  # type: ignore[attr-defined]

    def render_str(self, text: str, **kwargs: Any) -> Text:
        kwargs["markup"] = False
        return super().render_str(for_terminal(text), **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterator[Segment]:
        """rich's segments, the text of each escaped (a `Text` built from data never passes render_str);
        control segments are rich's own cursor moves and pass as they are."""
        for segment in super().render(renderable, options):
            if segment.control is None and _ANY_CONTROL.search(segment.text):
                yield Segment(for_terminal(segment.text), segment.style)
            else:
                yield segment


class DataColumn(TextColumn):
    """A progress column showing `task.fields[field]`, data such as a run id, task name or endpoint: plain
    text, escaped before rich measures it (rich parses a TextColumn's text as markup, and `[/x]` in data
    raised MarkupError)."""

    def __init__(self, field: str, style: str = ""):
        super().__init__(f"{{task.fields[{field}]}}", style=style, markup=False)

    def render(self, task: Task) -> Text:
        return Text(for_terminal(self.text_format.format(task=task)), style=self.style, justify=self.justify)


def data_column(field: str, style: str = "") -> DataColumn:
    return DataColumn(field, style)


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line of plain and (text, style) parts, every part through for_terminal: how ufcctl styles a
    line that quotes data, instead of markup."""
    return Text.assemble(*((for_terminal(p), "") if isinstance(p, str) else (for_terminal(p[0]), p[1])
                           for p in parts))
