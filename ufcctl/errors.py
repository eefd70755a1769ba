"""The one error family: every expected failure carries a message, a hint and an exit code."""

from __future__ import annotations

import re

# Exit codes (docs/style.md, "Python"): 0 ok, 1 a run failed, 2 bad input or usage.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class UfcError(Exception):
    """An expected failure; the CLI prints `Error: message` and `Hint: hint` and exits `exit_code`."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, hint: str | None = None, *, details: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        # Extra lines (one problem each) printed under the message, e.g. every inventory problem.
        self.details = details or []


class InputError(UfcError):
    """Bad input or usage: a file, flag or object that the user must fix. Nothing was touched."""

    exit_code = EXIT_BAD_INPUT


class RunFailed(UfcError):
    """A run started and failed on at least one host, or an external tool failed."""

    exit_code = EXIT_FAILED


class EnvironmentMissing(UfcError):
    """A tool the command needs (podman, ansible-playbook, ...) is not installed."""

    exit_code = EXIT_FAILED


class Stopped(KeyboardInterrupt):
    """ufcctl was asked to stop by SIGINT or SIGTERM, and stopped (and waited for) its Ansible processes.

    A KeyboardInterrupt, so every `except KeyboardInterrupt` that records an interrupted run records
    this one too. Exit code 128 + signal number, as a shell reports a process a signal ended."""

    def __init__(self, signum: int, what: str = ""):
        super().__init__(signum, what)
        self.signum = signum
        self.what = what

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def signal_name(self) -> str:
        import signal

        return signal.Signals(self.signum).name


# Error messages quote at most this many characters of a value a user supplied: a 5 MB string or the
# bytes of a foreign file read by mistake stay out of the one-line message (README.md, "Limits").
QUOTE_LIMIT = 80
# Python refuses to print an int of more than 4,300 digits (sys.get_int_max_str_digits()): a number
# that long is shown by its size, never converted.
_BIG_INT_BITS = 4000
_LOG10_2 = 0.30103


def cut(text: str, limit: int = QUOTE_LIMIT) -> str:
    """`text` as written, cut to `limit` characters plus "…": an address, a name, a parser's message."""
    return text if len(text) <= limit else text[:limit] + "…"


def shown(value: object, limit: int = QUOTE_LIMIT) -> str:
    """`repr(value)` cut to `limit` characters plus "…" (and its closing quote), for quoting user input in
    an error message."""
    if isinstance(value, int) and value.bit_length() > _BIG_INT_BITS:
        return f"an integer of about {int(value.bit_length() * _LOG10_2) + 1:,} digits"
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]  # repr() of the head only: never copy megabytes to cut them
    elif isinstance(value, (list, tuple, dict, set)) and len(value) > limit // 2:
        return f"a {type(value).__name__} of {len(value):,} items"
    try:
        text = repr(value)
    except ValueError:  # an int past Python's digit limit inside a collection
        return f"a {type(value).__name__}"
    if len(text) <= limit:
        return text
    # a cut repr keeps its closing quote: an open one would pair with the next quote of the message, and
    # cut_quoted would then cut the words between them
    return text[:limit] + "…" + (text[0] if text[0] in "'\"" else "")


# A word this long without a blank is no path or name a person wrote (NAME_MAX is 255): a value pasted
# whole into a message, cut like a quoted one.
LONG_WORD = 1024
# a quote opens after no letter or digit and closes before none: "the member's ... etcd's" is no quote
_QUOTED = re.compile(rf"""(?<!\w)'[^'\n]{{{QUOTE_LIMIT + 1},}}'(?!\w)"""
                     rf"""|(?<!\w)"[^"\n]{{{QUOTE_LIMIT + 1},}}"(?!\w)"""
                     rf"""|[^\s'"]{{{LONG_WORD + 1},}}""")


def _cut_span(match: re.Match[str]) -> str:
    span = match.group()
    if span[0] in "'\"":
        return span[: QUOTE_LIMIT + 1] + "…" + span[0]
    return span[:QUOTE_LIMIT] + "…"


def cut_quoted(message: str) -> str:
    """`message` with every quoted value ('…' or "…") cut to QUOTE_LIMIT characters, and every word
    longer than LONG_WORD too: the one cut every Error:, Hint: and problem line gets (README, "Limits"),
    whichever code built it."""
    return _QUOTED.sub(_cut_span, message)
