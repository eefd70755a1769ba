"""Host entries of a YAML inventory: `name:port` and ranges (`node[00001:16000]`, `rack[a:c]`, `[1:9:2]`).

The rules follow Ansible's documented behaviour (and what ansible-core 2.19 does; the differential
test in tests/integration holds us to it): `[begin:end]` or `[begin:end:step]`, inclusive; an
empty begin means 0; a begin with a leading zero keeps its width (`[001:016]`) and then the end
must have the same width; single letters make an alphabetic range (a..z then A..Z); several
ranges in one entry multiply out, the first range varying slowest. Where Ansible silently yields
no host (begin after end, a negative step) we report an error instead: that is never intended.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
import string
from collections.abc import Iterable

_RANGE = r"\[(?:[a-z]:[a-z]|[0-9]+:[0-9]+)(?::[0-9]+)?\]"
_LABEL = rf"(?:\w|{_RANGE})(?:[\w-]|{_RANGE})*(?<![_-])"
_HOSTNAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$", re.I | re.UNICODE)
_IPV4_PART = r"(?:25[0-5]|2[0-4][0-9]|[01]?[0-9]{1,2}|\[[0-9]+:[0-9]+(?::[0-9]+)?\])"
_IPV4 = re.compile(rf"^(?:{_IPV4_PART}\.){{3}}{_IPV4_PART}$")
# `[host]:port` (the only way to give an IPv6 address a port) and `host:port`, where the host part
# may hold complete `[...]` range expressions but no other colon.
_BRACKETED_PORT = re.compile(r"^\[(.+)\]:([0-9]+)$")
_HOST_PORT = re.compile(r"^((?:[^:\[\]]|\[[^\]]*\])*):([0-9]+)$")
_HEX_RANGE = re.compile(r"\[([0-9a-f]+):[0-9a-f]+(?::[0-9]+)?\]", re.I)


# The most hosts one inventory may define: twelve times the 16,000-node target, which still reads
# in about 5 s CPU and 600 MB (measured with tests/helpers/gen_inventory.py's ranges layout). Ranges
# are counted before they are expanded, so a typo such as node[0:99999999] is refused at once
# instead of filling memory (README "Limits").
MAX_HOSTS = 200_000
_SHOWN_COUNT_LIMIT = 10**12  # counts above this are printed as "over 10**12"


class HostPatternError(ValueError):
    """A host entry whose range cannot be expanded; the message says what is wrong."""


class HostCountError(HostPatternError):
    """A host entry that stands for more hosts than MAX_HOSTS."""


def split_port(entry: str) -> tuple[str, int | None]:
    """`host:2222` -> ("host", 2222); anything that is not a valid host with a port stays whole."""
    address, port = entry, None
    for pattern in (_BRACKETED_PORT, _HOST_PORT):  # both, in turn, as Ansible does
        match = pattern.match(address)
        if match:
            address, port = match.group(1), int(match.group(2))
    if port is None or _is_address(address):
        return address, port
    return entry, None  # not something Ansible understands as host:port: the entry is the name


def _is_address(text: str) -> bool:
    if _IPV4.match(text) or _HOSTNAME.match(text):
        return True
    try:
        ipaddress.IPv6Address(_HEX_RANGE.sub(lambda m: m.group(1), text))
    except ValueError:
        return False
    return True


def expand_host_pattern(pattern: str, limit: int = MAX_HOSTS) -> list[str]:
    """Every host name a pattern stands for, in Ansible's order; the pattern itself if it has no range.

    HostCountError, before anything is expanded, when that is more than `limit` names.
    """
    parts = _parse(pattern)
    count = _count(parts)
    if count > limit:
        shown = f"{count:,}" if count <= _SHOWN_COUNT_LIMIT else f"over {_SHOWN_COUNT_LIMIT:,}"
        entry = pattern if len(pattern) <= 80 else pattern[:77] + "..."
        raise HostCountError(f"host range {entry!r} stands for {shown} hosts, more than {limit:,} allowed")
    if len(parts) == 1:
        return [pattern]
    choices = [part.values() if isinstance(part, _Range) else (part,) for part in parts]
    return ["".join(name) for name in itertools.product(*choices)]  # the first range varies slowest


class _Range:
    """One `[begin:end:step]` of a pattern: its values, counted without listing them."""

    __slots__ = ("letters", "numbers", "width")

    def __init__(self, letters: str = "", numbers: range = range(0), width: int = 0) -> None:
        self.letters, self.numbers, self.width = letters, numbers, width

    def size(self) -> int:
        if self.letters:
            return len(self.letters)
        numbers = self.numbers  # arithmetic: len() of a range past sys.maxsize raises OverflowError
        return (numbers.stop - 1 - numbers.start) // numbers.step + 1

    def values(self) -> list[str]:
        if self.letters:
            return list(self.letters)
        if self.width:
            return [str(i).zfill(self.width) for i in self.numbers]
        return [str(i) for i in self.numbers]


def _parse(pattern: str) -> list[str | _Range]:
    """Literal text and ranges, left to right (a loop: an entry may hold any number of ranges)."""
    parts: list[str | _Range] = []
    rest = pattern
    while True:
        start = rest.find("[")
        if start < 0:
            parts.append(rest)
            return parts
        end = rest.find("]", start)
        if end < 0 or "]" in rest[:start]:
            raise HostPatternError(f"unbalanced brackets in host range {pattern!r}")
        parts.append(rest[:start])
        parts.append(_range_values(rest[start + 1 : end], pattern))
        rest = rest[end + 1 :]


def _count(parts: list[str | _Range]) -> int:
    count = 1
    for part in parts:
        if isinstance(part, _Range):
            count *= part.size()
            if count > _SHOWN_COUNT_LIMIT:  # no need to multiply on: far past any limit
                return _SHOWN_COUNT_LIMIT + 1
    return count


def _range_values(spec: str, pattern: str) -> _Range:
    bounds = spec.split(":")
    if len(bounds) not in (2, 3):
        raise HostPatternError(f"host range [{spec}] in {pattern!r} must be [begin:end] or [begin:end:step]")
    begin, end = bounds[0] or "0", bounds[1]
    if not end:
        raise HostPatternError(f"host range [{spec}] in {pattern!r} has no end value")
    try:
        step = int(bounds[2]) if len(bounds) == 3 else 1
    except ValueError:
        raise HostPatternError(
            f"host range [{spec}] in {pattern!r}: step {bounds[2]!r} is not a number"
        ) from None
    if step < 1:
        raise HostPatternError(f"host range [{spec}] in {pattern!r}: step must be at least 1")
    width = len(begin) if begin[0] == "0" and len(begin) > 1 else 0
    if width and len(end) != width:
        raise HostPatternError(
            f"host range [{spec}] in {pattern!r}: zero-padded begin and end must have the same width"
        )
    letters = string.ascii_letters
    if begin in letters and end in letters:  # Ansible's alphabetic range: a..z then A..Z
        first, last = letters.index(begin), letters.index(end)
        if first > last:
            raise HostPatternError(f"host range [{spec}] in {pattern!r}: begin comes after end")
        return _Range(letters=letters[first : last + 1 : step])
    try:
        low, high = int(begin), int(end)
    except ValueError:
        raise HostPatternError(
            f"host range [{spec}] in {pattern!r}: bounds must be two numbers or two letters"
        ) from None
    if low > high:
        raise HostPatternError(f"host range [{spec}] in {pattern!r}: begin is greater than end")
    return _Range(numbers=range(low, high + 1, step), width=width)


_TRAILING_NUMBER = re.compile(r"^(.*?)([0-9]+)([^0-9]*)$", re.S)


def compact_host_names(names: Iterable[str]) -> list[str]:
    """Runs of names folded back into range notation: `npu001`..`npu016` -> `npu[001:016]`,
    `npu001, npu005, npu009` -> `npu[001:009:4]`.

    For display only; `expand_host_pattern` of each item gives back exactly the names, in order.
    """
    out: list[str] = []
    run: list[tuple[str, str, str]] = []  # (prefix, digits, suffix) of the current run

    def flush() -> None:
        if len(run) > 1 and (len(run) > 2 or _step(run) == 1):
            prefix, first, suffix = run[0]
            step = _step(run)
            out.append(f"{prefix}[{first}:{run[-1][1]}{f':{step}' if step > 1 else ''}]{suffix}")
        else:
            out.extend("".join(part) for part in run)
        run.clear()

    for name in names:
        match = None if "[" in name or "]" in name else _TRAILING_NUMBER.match(name)
        if match is None:
            flush()
            out.append(name)
            continue
        parts = (match.group(1), match.group(2), match.group(3))
        if run and not _continues(run, *parts):
            if len(run) == 2 and _step(run) > 1:  # a pair with a gap: let the second start anew
                first = run.pop(0)
                out.append("".join(first))
                if _continues(run, *parts):
                    run.append(parts)
                    continue
            flush()
        run.append(parts)
    flush()
    return out


def _step(run: list[tuple[str, str, str]]) -> int:
    return int(run[1][1]) - int(run[0][1]) if len(run) > 1 else 1


def _continues(run: list[tuple[str, str, str]], prefix: str, digits: str, suffix: str) -> bool:
    first_prefix, first_digits, first_suffix = run[0]
    if (prefix, suffix) != (first_prefix, first_suffix):
        return False
    gap = int(digits) - int(run[-1][1])
    if gap < 1 or (len(run) > 1 and gap != _step(run)):
        return False
    if first_digits[0] == "0" and len(first_digits) > 1:  # padded run: every member has the same width
        return len(digits) == len(first_digits)
    return digits == str(int(digits))  # unpadded run: no member may have a leading zero
