"""The limits of ufcctl's YAML reader (engine/yaml_loader.py, whose docstring says why each one exists)
and the errors it raises past them: nesting, alias expansion, numbers too long to read, duplicate keys.
JSON readers use the same number limit (`json_int`, placement snapshots and inventories in JSON).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.error import Mark

from ufcctl.errors import shown

# Far above real documents: a kubectl object nests about 15 levels (managedFields mirror the
# object), an inventory about 12 (each group nested in YAML adds two: `name:` and `children:`).
# Low enough that PyYAML's recursive constructor (3 frames a level) and Ansible stay inside
# Python's default recursion limit of 1,000.
MAX_DEPTH = 100
# A 16,000-host inventory writing `<<: *defaults` (6 vars, 13 nodes) under every host adds 208,000
# nodes by alias; kubectl never writes aliases. A bomb passes this in well under a second.
MAX_ALIAS_NODES = 1_000_000


class LimitError(yaml.MarkedYAMLError):
    """A document past one of the limits above (too deep, aliases expanding too far, recursive)."""

    def __init__(self, problem: str, mark: Mark | None, fix: str) -> None:
        super().__init__(None, None, problem, mark)
        self.fix = fix


DEPTH_FIX = f'flatten it: ufcctl reads {MAX_DEPTH} levels at most (README.md, "Limits", says why)'
ALIAS_FIX = "write the values out instead of aliases of aliases (README.md, \"Limits\", says why)"
RECURSION_FIX = "remove that alias: nothing can write out a value that contains itself"
# Python's int() refuses more than 4,300 decimal digits (sys.get_int_max_str_digits(), a guard
# against quadratic-time conversion); no count, port or id comes near it.
MAX_INT_DIGITS = 4300
MAX_INT_BITS = 14_280  # 4,300 decimal digits: a larger int could never be printed
DIGITS_FIX = "write a realistic number: no value ufcctl or Ansible uses needs that many digits"


def too_many_digits(length: int | None) -> str:
    """The message for a number past MAX_INT_DIGITS digits (`length` characters, when known)."""
    size = f" of {length:,} characters" if length is not None else ""
    return f"a number{size}: more than the {MAX_INT_DIGITS:,} digits Python reads"


class HugeNumberError(Exception):
    """A JSON integer past MAX_INT_DIGITS digits (json.loads would raise a bare ValueError)."""

    def __init__(self, length: int) -> None:
        super().__init__(too_many_digits(length))
        self.length = length


def json_int(text: str) -> int:
    """`parse_int` for json.loads: the int, or HugeNumberError past MAX_INT_DIGITS digits."""
    if len(text) > MAX_INT_DIGITS:
        raise HugeNumberError(len(text))
    return int(text)


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A key given twice in one mapping; `problem_mark` is the second one, `first_line` the first."""

    def __init__(self, key: Any, mark: Mark | None, first_line: int | None) -> None:
        also = f" (also at line {first_line})" if first_line else ""
        super().__init__(None, None, f"duplicate key {shown(key)}{also}", mark)
        self.key = key
        self.first_line = first_line
