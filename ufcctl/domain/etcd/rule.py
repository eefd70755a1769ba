"""The defrag rule language: a parsed, type-checked arithmetic/boolean expression (never Python eval).

Same operators and variables as ahrtr/etcd-defrag's `--defrag-rule` (docs/reference/components.md §1.1):
`+ - * / %`, comparisons, `&& || !`, parentheses, numbers, `true`/`false`, and the variables
`dbSize, dbSizeInUse, dbSizeFree, dbQuota, dbQuotaUsage` (floats). Precedence follows Go/C:
`||` < `&&` < `== !=` < `< <= > >=` < `+ -` < `* / %` < unary `! - +`.

Standard library only: this module is shipped to etcd nodes and runs in the defrag agent there.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

VARIABLES = ("dbSize", "dbSizeInUse", "dbSizeFree", "dbQuota", "dbQuotaUsage")
# etcd-defrag's documented example (docs/reference/components.md §1.1); the issue asks for this default.
DEFAULT_RULE = "dbSizeFree > 200*1024*1024 || dbQuotaUsage > 0.8"
# A rule is a line in a config file; the limits keep a hostile or broken one from exhausting memory
# or recursion on a node.
MAX_RULE_CHARS = 1000
MAX_DEPTH = 60

_TOKEN = re.compile(
    r"\s*(?:"
    r"(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|[-+*/%<>!()])"
    r")"
)


class RuleError(ValueError):
    """A rule that does not parse, does not type-check, or cannot be evaluated."""

    def __init__(self, message: str, rule: str = "", column: int | None = None):
        where = f" at column {column + 1}" if column is not None else ""
        super().__init__(f"defrag rule {rule!r}: {message}{where}" if rule else message)
        self.column = column


@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Bool:
    value: bool


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Unary:
    op: str
    operand: Node


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node


Node = Num | Bool | Var | Unary | Binary

_ARITH = ("+", "-", "*", "/", "%")
_ORDER = ("<", "<=", ">", ">=")
_EQUALITY = ("==", "!=")


@dataclass(frozen=True)
class _Token:
    kind: str  # number, name, op, end
    text: str
    column: int


def _tokenize(rule: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(rule):
        if rule[pos:].strip() == "":
            break
        match = _TOKEN.match(rule, pos)
        if match is None or match.end() == pos:
            column = len(rule) - len(rule[pos:].lstrip())
            raise RuleError(f"unexpected character {rule[column]!r}", rule, column)
        kind = match.lastgroup or "op"
        tokens.append(_Token(kind, match.group(kind), match.start(kind)))
        pos = match.end()
    tokens.append(_Token("end", "", len(rule)))
    return tokens


class _Parser:
    """Recursive descent, one method per precedence level; types are checked as nodes are built."""

    def __init__(self, rule: str):
        self.rule = rule
        self.tokens = _tokenize(rule)
        self.pos = 0
        self.depth = 0

    def error(self, message: str, token: _Token | None = None) -> RuleError:
        token = token or self.tokens[self.pos]
        return RuleError(message, self.rule, token.column)

    def peek(self) -> _Token:
        return self.tokens[self.pos]

    def take(self, *ops: str) -> _Token | None:
        token = self.tokens[self.pos]
        if token.kind == "op" and token.text in ops:
            self.pos += 1
            return token
        return None

    def parse(self) -> Node:
        node = self.or_expr()
        if self.peek().kind != "end":
            raise self.error(f"unexpected {self.peek().text!r}")
        return node

    def binary(self, ops: tuple[str, ...], operand: str, next_level: Callable[[], Node]) -> Node:
        left = next_level()
        while token := self.take(*ops):
            right = next_level()
            self.check(left, operand, token)
            self.check(right, operand, token)
            left = Binary(token.text, left, right)
        return left

    def or_expr(self) -> Node:
        return self.binary(("||",), "bool", self.and_expr)

    def and_expr(self) -> Node:
        return self.binary(("&&",), "bool", self.equality)

    def equality(self) -> Node:
        left = self.comparison()
        while token := self.take(*_EQUALITY):
            right = self.comparison()
            if _type(left) != _type(right):
                raise self.error(f"{token.text!r} compares a {_type(left)} with a {_type(right)}", token)
            left = Binary(token.text, left, right)
        return left

    def comparison(self) -> Node:
        return self.binary(_ORDER, "number", self.additive)

    def additive(self) -> Node:
        return self.binary(("+", "-"), "number", self.term)

    def term(self) -> Node:
        return self.binary(("*", "/", "%"), "number", self.unary)

    def unary(self) -> Node:
        token = self.take("!", "-", "+")
        if token is None:
            return self.primary()
        self.enter(token)
        operand = self.unary()
        self.depth -= 1
        self.check(operand, "bool" if token.text == "!" else "number", token)
        return Unary(token.text, operand)

    def primary(self) -> Node:
        token = self.peek()
        if token.kind == "number":
            self.pos += 1
            return Num(float(token.text))
        if token.kind == "name":
            self.pos += 1
            if token.text in ("true", "false"):
                return Bool(token.text == "true")
            if token.text not in VARIABLES:
                raise self.error(f"unknown variable {token.text!r} (known: {', '.join(VARIABLES)})", token)
            return Var(token.text)
        if self.take("("):
            self.enter(token)
            node = self.or_expr()
            self.depth -= 1
            if not self.take(")"):
                raise self.error(
                    "missing ')'" if self.peek().kind == "end" else f"expected ')' not {self.peek().text!r}"
                )
            return node
        if token.kind == "end":
            raise self.error("expression ends too early")
        raise self.error(f"unexpected {token.text!r}")

    def enter(self, token: _Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"nested deeper than {MAX_DEPTH} levels", token)

    def check(self, node: Node, wanted: str, token: _Token) -> None:
        if _type(node) != wanted:
            raise self.error(f"{token.text!r} needs a {wanted} operand, got a {_type(node)}", token)


def _type(node: Node) -> str:
    if isinstance(node, Num | Var):
        return "number"
    if isinstance(node, Bool):
        return "bool"
    if isinstance(node, Unary):
        return "bool" if node.op == "!" else "number"
    if node.op in _ARITH:
        return "number"
    return "bool"


@dataclass(frozen=True)
class Rule:
    """A parsed rule; `evaluate` takes the five variables and returns whether to defragment."""

    text: str
    tree: Node

    def evaluate(self, variables: Mapping[str, float]) -> bool:
        missing = [v for v in VARIABLES if v not in variables]
        if missing:
            raise RuleError(f"missing variables: {', '.join(missing)}", self.text)
        return bool(_eval(self.tree, variables, self.text))


def parse_rule(text: str) -> Rule:
    """Parse and type-check `text`; raise RuleError naming the column of the first problem."""
    if len(text) > MAX_RULE_CHARS:
        raise RuleError(f"longer than {MAX_RULE_CHARS} characters", text[:40] + "...")
    if not text.strip():
        raise RuleError("empty rule (use `true` to always defragment)", text)
    tree = _Parser(text).parse()
    if _type(tree) != "bool":
        raise RuleError("must be a condition (true/false), not a number", text)
    return Rule(text, tree)


def rule_variables(db_size: float, db_size_in_use: float, db_quota: float) -> dict[str, float]:
    """The five rule variables for one member, as etcd-defrag defines them."""
    return {
        "dbSize": float(db_size),
        "dbSizeInUse": float(db_size_in_use),
        "dbSizeFree": float(db_size - db_size_in_use),
        "dbQuota": float(db_quota),
        "dbQuotaUsage": float(db_size) / float(db_quota) if db_quota else math.inf,
    }


def _eval(node: Node, env: Mapping[str, float], text: str) -> float | bool:
    if isinstance(node, Num | Bool):
        return node.value
    if isinstance(node, Var):
        return float(env[node.name])
    if isinstance(node, Unary):
        value = _eval(node.operand, env, text)
        return (not value) if node.op == "!" else (-value if node.op == "-" else +value)
    if node.op == "&&":  # short-circuit, like Go
        return bool(_eval(node.left, env, text)) and bool(_eval(node.right, env, text))
    if node.op == "||":
        return bool(_eval(node.left, env, text)) or bool(_eval(node.right, env, text))
    left, right = _eval(node.left, env, text), _eval(node.right, env, text)
    if node.op in ("/", "%") and right == 0:
        raise RuleError(f"division by zero in {node.op!r}", text)
    return _OPS[node.op](left, right)


_OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "%": math.fmod,  # Go's float modulo keeps the dividend's sign, as fmod does
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}
