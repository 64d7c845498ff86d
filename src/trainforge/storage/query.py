"""The run query language: filter and sort strings parsed into a small, immutable AST.

Pure functions, no SQL and no `eval`; `sql_search.py` translates the AST for the SQL store.

    filter      := disjunction
    disjunction := conjunction ("or" conjunction)*
    conjunction := term ("and" term)*
    term        := "(" disjunction ")" | comparison
    comparison  := field op value
    field       := "metrics." name | "params." name | "tags." name | "system." name | "status"
                   | "experiment" | "run_id" | "parent_run_id"
    op          := "=" | "!=" | "<" | "<=" | ">" | ">="
    value       := number | 'text' | "text" | true | false
    sort        := ["-"] (field | "started_at" | "ended_at") ("," sort)*   ("-": descending)

"and" binds tighter than "or"; keywords (and, or, true, false) are case-insensitive. A name is
letters, digits and `_ . / -` (starting with a letter or `_`); dots in a params, tags or system
name walk into nested dicts (`params.training.optimizer.lr`, `tags.gates.passed`).

Types: a metric compares with numbers; an attribute (status, experiment, ...) with strings, and
status only with a status name; a params, tags or system value with a number, a string or a
boolean, where true and false take only = and !=. Errors are `QueryError`s naming the position
and what was expected there.

    >>> parse_filter("tags.gates.passed = false or (status = 'failed' and metrics.auc < 0.5)")
    ... # doctest: +SKIP
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Union

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
_WORD_OR = re.compile(r"or(?![\w.])", re.IGNORECASE)
_BOOLEAN = re.compile(r"(?:true|false)(?![\w.])", re.IGNORECASE)
_OPEN = re.compile(r"\(")
_CLOSE = re.compile(r"\)")


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
    """`field op value`: a number is a float, a quoted string a str, true / false a bool."""

    field: Field
    op: str
    value: float | str | bool


@dataclass(frozen=True)
class AllOf:
    """Every term holds ("and"); at least two terms."""

    terms: tuple[Condition, ...]


@dataclass(frozen=True)
class AnyOf:
    """At least one term holds ("or"); at least two terms."""

    terms: tuple[Condition, ...]


Condition = Union[Comparison, AllOf, AnyOf]


@dataclass(frozen=True)
class SortKey:
    field: Field
    descending: bool = False


def parse_filter(text: str | None) -> Condition | None:
    """The condition `text` states (a lone comparison, or `AllOf` / `AnyOf` of terms); None for
    None or blank text, which every run meets."""
    if text is None or not text.strip():
        return None
    scanner = _Scanner(text)
    condition = _disjunction(scanner)
    if not scanner.at_end():
        raise scanner.error("'and', 'or' or the end of the filter")
    return condition


def comparisons(condition: Condition | None) -> tuple[Comparison, ...]:
    """Every comparison in `condition`, in the order of the text."""
    if condition is None:
        return ()
    if isinstance(condition, Comparison):
        return (condition,)
    return tuple(c for term in condition.terms for c in comparisons(term))


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


def _disjunction(scanner: _Scanner) -> Condition:
    terms = [_conjunction(scanner)]
    while scanner.take(_WORD_OR) is not None:
        terms.append(_conjunction(scanner))
    return terms[0] if len(terms) == 1 else AnyOf(tuple(terms))


def _conjunction(scanner: _Scanner) -> Condition:
    terms = [_term(scanner)]
    while scanner.take(_WORD_AND) is not None:
        terms.append(_term(scanner))
    return terms[0] if len(terms) == 1 else AllOf(tuple(terms))


def _term(scanner: _Scanner) -> Condition:
    if scanner.take(_OPEN) is None:
        return _comparison(scanner)
    condition = _disjunction(scanner)
    if scanner.take(_CLOSE) is None:
        raise scanner.error("'and', 'or' or ')'")
    return condition


def _comparison(scanner: _Scanner) -> Comparison:
    start = scanner.position
    field = _field(scanner, "a field (metrics.X, params.X, tags.X, system.X, "
                   + ", ".join(FILTER_ATTRIBUTES) + ")")
    if field.kind == "attribute" and field.name not in FILTER_ATTRIBUTES:
        raise QueryError(scanner.text, start, f"unknown field {field.name!r}; expected "
                         f"metrics.X, params.X, tags.X, system.X or one of "
                         f"{', '.join(FILTER_ATTRIBUTES)}")
    op_at = scanner.skip_space()
    op = scanner.expect(_OPERATOR, "an operator (" + " ".join(OPERATORS) + ")")
    value_at = scanner.skip_space()
    value = _value(scanner)
    _check_types(scanner.text, value_at, field, value)
    if isinstance(value, bool) and op not in ("=", "!="):
        raise QueryError(scanner.text, op_at, f"true and false compare with = or != only, "
                         f"got {op!r}")
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


def _value(scanner: _Scanner) -> float | str | bool:
    number = scanner.take(_NUMBER)
    if number is not None:
        return float(number)
    boolean = scanner.take(_BOOLEAN)
    if boolean is not None:
        return boolean.lower() == "true"
    start = scanner.position
    quote = scanner.text[start:start + 1]
    if quote not in ("'", '"'):
        raise QueryError(scanner.text, start, "expected a number, a quoted string, true or "
                         "false, got " + scanner.describe_next())
    end = scanner.text.find(quote, start + 1)
    if end < 0:
        raise QueryError(scanner.text, start, f"unterminated string: expected a closing {quote}")
    scanner.position = end + 1
    return scanner.text[start + 1:end]


def _check_types(text: str, position: int, field: Field, value: float | str | bool) -> None:
    if field.kind == "metrics" and not isinstance(value, float):
        got = "a string" if isinstance(value, str) else str(value).lower()
        raise QueryError(text, position, f"{field} is a number; expected a number, got {got}")
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
            raise self.error(expected)
        return token

    def error(self, expected: str) -> QueryError:
        """A `QueryError` at the next token: `expected` there, and what was found."""
        return QueryError(self.text, self.skip_space(),
                          f"expected {expected}, got {self.describe_next()}")

    def describe_next(self) -> str:
        rest = self.text[self.skip_space():]
        return repr(rest.split()[0][:20]) if rest.strip() else "the end"
