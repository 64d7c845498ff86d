"""Request records checked against a served version's input contract, and flagged against its
training profile.

Rules:
- A request is a non-empty JSON list of objects. Every column the feature pipeline reads is
  required; other contract columns are optional but, when present, must have their type;
  fields the contract does not name are refused unless it allows extra columns.
- Types, as JSON carries them: int (a number with no fractional part, as JSON Schema's
  integer: 3 or 3.0, not true/false), float (a finite number), string, bool, datetime (an ISO
  8601 string; a datetime in records read from a file). A null is accepted only in a nullable
  column.
- A number in a column the encoder reads as a number must lie within the encoder's `limits`
  (the range its features can hold, float32's): outside them it is refused, naming the limits
  and the contract's own range.
- A contract's `min`/`max`/`allowed` and the profile are not refusals: a value outside the
  profile's range, or a category the model never learned (encoded as `__other__`), is flagged
  on its record (`out_of_range`, `unseen_category`).
- `problems` returns at most `MAX_PROBLEMS`, each naming the record index (from 0) and field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainforge.validate import ColumnRule, SchemaContract

MAX_PROBLEMS = 20
Problem = dict[str, Any]


def _is_datetime(value: Any) -> bool:
    if isinstance(value, datetime):  # records read from a file rather than JSON
        return True
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "int": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "float": lambda v: type(v) is int or (type(v) is float and math.isfinite(v)),
    "string": lambda v: type(v) is str,
    "bool": lambda v: type(v) is bool,
    "datetime": _is_datetime,
}
_EXPECTED = {"int": "an integer", "float": "a finite number", "string": "text",
             "bool": "true or false", "datetime": "an ISO 8601 date-time string"}


@dataclass(frozen=True)
class RecordChecker:
    """The contract and profile checks of one served version."""

    rules: Mapping[str, ColumnRule]
    required: tuple[str, ...]
    allow_extra: bool
    ranges: Mapping[str, tuple[float, float]]
    categories: Mapping[str, frozenset[Any]]
    limits: Mapping[str, tuple[float, float]]

    @classmethod
    def build(cls, contract: SchemaContract, required: list[str], profile: Mapping[str, Any],
              limits: Mapping[str, tuple[float, float]]) -> RecordChecker:
        columns: Mapping[str, Mapping[str, Any]] = profile.get("columns", {})
        ranges = {c: (float(p["min"]), float(p["max"])) for c, p in columns.items()
                  if "min" in p and "max" in p}
        categories = {c: frozenset(p["categories"]) for c, p in columns.items()
                      if "categories" in p}
        return cls(dict(contract.columns), tuple(required), contract.allow_extra_columns,
                   ranges, categories, dict(limits))

    def problems(self, body: Any) -> list[Problem]:
        """What makes the request body unusable (empty when it is fine)."""
        if not isinstance(body, list):
            return [_problem(None, None, f"expected a JSON list of records, got "
                                         f"{_json_type(body)}")]
        if not body:
            return [_problem(None, None, "expected at least one record, got an empty list")]
        found: list[Problem] = []
        for index, record in enumerate(body):
            found += self._record_problems(index, record)
            if len(found) >= MAX_PROBLEMS:
                return found[:MAX_PROBLEMS]
        return found

    def _record_problems(self, index: int, record: Any) -> list[Problem]:
        if not isinstance(record, dict):
            return [_problem(index, None, f"expected an object, got {_json_type(record)}")]
        found = [_problem(index, name, "missing") for name in self.required
                 if name not in record]
        for name, value in record.items():
            rule = self.rules.get(name)
            if rule is None:
                if not self.allow_extra:
                    found.append(_problem(index, name, "not in the input contract"))
            elif value is None:
                if not rule.nullable:
                    found.append(_problem(index, name, "is null; the contract says not null"))
            elif not TYPE_CHECKS[rule.type](value):
                found.append(_problem(index, name, f"expected {_EXPECTED[rule.type]}, got "
                                                   f"{_json_type(value)}{_shown(value)}"))
            elif name in self.limits and _is_number(value):
                low, high = self.limits[name]
                if not low <= value <= high:
                    found.append(_problem(index, name, _beyond(value, low, high, rule)))
        return found

    def flags(self, records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        """Per record: its values outside the training profile."""
        return [self._record_flags(record) for record in records]

    def _record_flags(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        flags: list[dict[str, Any]] = []
        for name, (low, high) in self.ranges.items():
            value = record.get(name)
            if isinstance(value, (int, float)) and not (low <= value <= high) \
                    and value == value:  # a missing value (NaN) is no value out of range
                flags.append({"field": name, "flag": "out_of_range", "value": value,
                              "expected": [low, high]})
        for name, seen in self.categories.items():
            value = record.get(name)
            if value is not None and not (isinstance(value, float) and math.isnan(value)) \
                    and value not in seen and str(value) not in seen:  # a profile's are text
                flags.append({"field": name, "flag": "unseen_category", "value": value})
        return flags


def _beyond(value: float, low: float, high: float, rule: ColumnRule) -> str:
    shown = (f"an integer of {len(str(abs(value)))} digits"
             if isinstance(value, int) and abs(value) >= 10**20 else repr(value))
    message = (f"{shown} is beyond what the model's features can hold: expected a number from "
               f"{low!r} to {high!r}")
    if rule.min is not None and rule.max is not None:
        expects = f"{_plain(rule.min)} to {_plain(rule.max)}"
    elif rule.min is not None:
        expects = f"at least {_plain(rule.min)}"
    elif rule.max is not None:
        expects = f"at most {_plain(rule.max)}"
    else:
        return message
    return (f"{message} (the input contract expects {expects}; a value outside that but within "
            f"these limits is scored and flagged)")


def _plain(number: float) -> str:
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _shown(value: Any) -> str:
    """The value as the error shows it: scalars only (a nested list may be too deep to print)."""
    return "" if isinstance(value, (list, dict)) else f" {value!r:.40}"


def _problem(record: int | None, field: str | None, error: str) -> Problem:
    return {"record": record, "field": field, "error": error}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
