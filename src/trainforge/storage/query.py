"""The run query language: filter and sort strings parsed into a small, immutable AST.

Pure functions, no SQL and no `eval`; `sql_search.py` translates the AST for the SQL store.

    filter  := comparison ("and" comparison)*
    comparison := field op value
    field   := "metrics." name | "params." name | "tags." name | "system." name | "status"
               | "experiment" | "run_id" | "parent_run_id"
    op      := "=" | "!=" | "<" | "<=" | ">" | ">="
    value   := number | 'text' | "text"
    sort    := ["-"] (field | "started_at" | "ended_at") ("," sort)*     ("-": descending)

A name is letters, digits and `_ . / -` (starting with a letter or `_`); dots in a params, tags
or system name walk into nested dicts (`params.training.optimizer.lr`, `system.process.host`).
Errors are `QueryError`s naming the position and what was expected there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from trainforge.entities import RunStatus
from trainforge.errors import QueryError

Kind = Literal["metrics", "params", "tags", "system", "attribute"]
OPERATORS = ("=", "!=", "<", "<=", ">", ">=")
FILTER_ATTRIBUTES = ("status", "experiment", "run_id", "parent_run_id")
SORT_ATTRIBUTES = ("started_at", "ended_at", "status", "run_id")
_PREFIXES: tuple[Kind, ...] = ("metrics", "params", "tags", "system")
_NAME = re.compile(r"[A-Za-z_][\w./-]*")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")
_OPERATOR = re.compile(r"!=|<=|>=|=|<|>")
_WORD_AND = re.compile(r"and(?![\w.])", re.IGNORECASE)


@dataclass(frozen=True)
class Field:
    """`kind` "attribute" names a run column; otherwise `name` is the metric / param / tag /
    system key (for all but metrics, `path` is that key split on dots)."""

    kind: Kind
    name: str

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.name.split("."))

    def __str__(self) -> str:
        return self.name if self.kind == "attribute" else f"{self.kind}.{self.name}"


@dataclass(frozen=True)
class Comparison:
    field: Field
    op: str
    value: float | str


@dataclass(frozen=True)
class SortKey:
    field: Field
    descending: bool = False


def parse_filter(text: str | None) -> tuple[Comparison, ...]:
    """The comparisons of `text`, all of which must hold; () for None or blank text."""
    if text is None or not text.strip():
        return ()
    scanner = _Scanner(text)
    comparisons = [_comparison(scanner)]
    while not scanner.at_end():
        scanner.expect(_WORD_AND, "'and' or the end of the filter")
        comparisons.append(_comparison(scanner))
    return tuple(comparisons)


def parse_sort(text: str | None) -> tuple[SortKey, ...]:
    """Sort keys from a comma-separated list like "-metrics.test_auc,started_at"."""
    if text is None or not text.strip():
        return ()
    keys = []
    scanner = _Scanner(text)
    while True:
        descending = scanner.take(re.compile(r"-")) is not None
        start = scanner.position
        field = _field(scanner, "a sort key (metrics.X, params.X, tags.X, system.X or "
                       + ", ".join(SORT_ATTRIBUTES) + ")")
        if field.kind == "attribute" and field.name not in SORT_ATTRIBUTES:
            raise QueryError(text, start, f"cannot sort by {field.name!r}; expected metrics.X, "
                             f"params.X, tags.X, system.X or one of "
                             f"{', '.join(SORT_ATTRIBUTES)}")
        keys.append(SortKey(field, descending))
        if scanner.at_end():
            return tuple(keys)
        scanner.expect(re.compile(r","), "',' or the end of the sort keys")


def _comparison(scanner: _Scanner) -> Comparison:
    start = scanner.position
    field = _field(scanner, "a field (metrics.X, params.X, tags.X, system.X, "
                   + ", ".join(FILTER_ATTRIBUTES) + ")")
    if field.kind == "attribute" and field.name not in FILTER_ATTRIBUTES:
        raise QueryError(scanner.text, start, f"unknown field {field.name!r}; expected "
                         f"metrics.X, params.X, tags.X, system.X or one of "
                         f"{', '.join(FILTER_ATTRIBUTES)}")
    op = scanner.expect(_OPERATOR, "an operator (" + " ".join(OPERATORS) + ")")
    value_at = scanner.skip_space()
    value = _value(scanner)
    _check_types(scanner.text, value_at, field, value)
    return Comparison(field, op, value)


def _field(scanner: _Scanner, expected: str) -> Field:
    start = scanner.skip_space()
    name = scanner.expect(_NAME, expected)
    prefix, _, rest = name.partition(".")
    if prefix in _PREFIXES:
        if not rest or rest.endswith(".") or ".." in rest:
            raise QueryError(scanner.text, start, f"expected a name after '{prefix}.'")
        return Field(prefix, rest)
    if "." in name:
        raise QueryError(scanner.text, start, f"unknown field {name!r}; expected it to start "
                         "with metrics., params., tags. or system.")
    return Field("attribute", name)


def _value(scanner: _Scanner) -> float | str:
    number = scanner.take(_NUMBER)
    if number is not None:
        return float(number)
    start = scanner.position
    quote = scanner.text[start:start + 1]
    if quote not in ("'", '"'):
        raise QueryError(scanner.text, start, "expected a number or a quoted string, got "
                         + scanner.describe_next())
    end = scanner.text.find(quote, start + 1)
    if end < 0:
        raise QueryError(scanner.text, start, f"unterminated string: expected a closing {quote}")
    scanner.position = end + 1
    return scanner.text[start + 1:end]


def _check_types(text: str, position: int, field: Field, value: float | str) -> None:
    if field.kind == "metrics" and isinstance(value, str):
        raise QueryError(text, position, f"{field} is a number; expected a number, got a string")
    if field.kind == "attribute" and not isinstance(value, str):
        raise QueryError(text, position, f"{field} is text; expected a quoted string")
    if field.name == "status" and field.kind == "attribute":
        allowed = [s.value for s in RunStatus]
        if value not in allowed:
            raise QueryError(text, position, f"expected a status ({', '.join(allowed)}), "
                             f"got {value!r}")


class _Scanner:
    """A cursor over the text that skips spaces before each token."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0

    def skip_space(self) -> int:
        while self.position < len(self.text) and self.text[self.position].isspace():
            self.position += 1
        return self.position

    def at_end(self) -> bool:
        return self.skip_space() >= len(self.text)

    def take(self, pattern: re.Pattern[str]) -> str | None:
        match = pattern.match(self.text, self.skip_space())
        if match is None:
            return None
        self.position = match.end()
        return match.group()

    def expect(self, pattern: re.Pattern[str], expected: str) -> str:
        token = self.take(pattern)
        if token is None:
            raise QueryError(self.text, self.position,
                             f"expected {expected}, got {self.describe_next()}")
        return token

    def describe_next(self) -> str:
        rest = self.text[self.skip_space():]
        return repr(rest.split()[0][:20]) if rest.strip() else "the end"
