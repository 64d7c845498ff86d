"""`check_contract`: a pure, vectorised check of a frame against a schema contract.

Rules, per contract column (in contract order), then per extra column:
- present: the column exists (else one violation counting every row, and no other checks).
- type: each non-null value fits the type. int: whole numbers (a float column holding only
  whole numbers passes, as CSVs with gaps produce); float: numbers; string: text; bool: true or
  false; datetime: datetime values or ISO 8601 text. Numeric text in an object column counts
  as a number; bools never count as numbers.
- not null: no nulls unless `nullable: true`.
- min / max: numeric values below / above the bound.
- allowed: non-null values of the right type outside the list.
- unexpected column: columns the contract does not name, when `allow_extra_columns` is false.

Row locations are `locate(position)` (an `IngestResult.locate` names the file and line), or
`row <n>` counted from 1 when no `locate` is given.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from trainforge.validate._contract import ColumnRule, SchemaContract
from trainforge.validate._report import ValidationReport, Violation

Locate = Callable[[int], str]

_FIRST_ROWS = 5
_TYPE_TEXT = {
    "int": "whole numbers (type int)",
    "float": "numbers (type float)",
    "string": "text (type string)",
    "bool": "true or false (type bool)",
    "datetime": "timestamps or ISO 8601 text (type datetime)",
}


def check_contract(
    frame: pd.DataFrame, contract: SchemaContract, locate: Locate | None = None
) -> ValidationReport:
    """Check every rule of `contract` on `frame`; row locations come from `locate(position)`."""
    where = locate or (lambda row: f"row {row + 1}")
    rows = len(frame)
    violations: list[Violation] = []
    for name, rule in contract.columns.items():
        if name not in frame.columns:
            violations.append(Violation(name, "present", "a column of that name", rows, ()))
        else:
            violations.extend(_check_column(frame[name], name, rule, where))
    if not contract.allow_extra_columns:
        expected = "only the contract's columns (allow_extra_columns is false)"
        extra = [c for c in frame.columns if c not in contract.columns]
        violations.extend(Violation(str(c), "unexpected column", expected, rows, ()) for c in extra)
    return ValidationReport(violations=tuple(violations), rows_checked=rows)


def _check_column(series: pd.Series, name: str, rule: ColumnRule, where: Locate) -> list[Violation]:
    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(object)
    nulls = series.isna().to_numpy()
    numbers, misfit = _TYPE_CHECKS[rule.type](series, nulls)
    broken = [("type", _TYPE_TEXT[rule.type], misfit)]
    if not rule.nullable:
        broken.append(("not null", "a value in every row (nullable is false)", nulls))
    if rule.min is not None:
        broken.append(("min", f">= {_number(rule.min)}", numbers < rule.min))
    if rule.max is not None:
        broken.append(("max", f"<= {_number(rule.max)}", numbers > rule.max))
    if rule.allowed is not None:
        outside = ~nulls & ~misfit & ~series.isin(rule.allowed).to_numpy()
        broken.append(("allowed", f"one of {rule.allowed!r}", outside))
    return [_violation(name, *item, where) for item in broken if item[2].any()]


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _violation(name: str, rule: str, expected: str, mask: np.ndarray, where: Locate) -> Violation:
    first = tuple(where(int(i)) for i in np.flatnonzero(mask)[:_FIRST_ROWS])
    return Violation(name, rule, expected, int(mask.sum()), first)


def _as_numbers(series: pd.Series, nulls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(float64 values, NaN where null or not a number; mask of non-null non-numbers)."""
    if ptypes.is_bool_dtype(series.dtype) or ptypes.is_datetime64_any_dtype(series.dtype):
        return np.full(len(series), np.nan), ~nulls
    if ptypes.is_numeric_dtype(series.dtype):
        return series.to_numpy(dtype=np.float64, na_value=np.nan), np.zeros(len(series), bool)
    is_bool = series.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
    numbers = pd.to_numeric(series.where(~is_bool), errors="coerce")
    values = numbers.to_numpy(dtype=np.float64, na_value=np.nan)
    return values, ~nulls & np.isnan(values)


def _check_int(series: pd.Series, nulls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values, misfit = _as_numbers(series, nulls)
    with np.errstate(invalid="ignore"):
        fractional = ~np.isnan(values) & (np.mod(values, 1) != 0)
    return values, misfit | fractional


def _check_string(series: pd.Series, nulls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if ptypes.is_string_dtype(series.dtype) and not ptypes.is_object_dtype(series.dtype):
        return _no_numbers(series), np.zeros(len(series), bool)
    if ptypes.is_object_dtype(series.dtype):
        is_text = series.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
        return _no_numbers(series), ~nulls & ~is_text
    return _no_numbers(series), ~nulls


def _check_bool(series: pd.Series, nulls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if ptypes.is_bool_dtype(series.dtype):
        return _no_numbers(series), np.zeros(len(series), bool)
    is_bool = series.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
    return _no_numbers(series), ~nulls & ~is_bool


def _check_datetime(series: pd.Series, nulls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if ptypes.is_datetime64_any_dtype(series.dtype):
        return _no_numbers(series), np.zeros(len(series), bool)
    if ptypes.is_numeric_dtype(series.dtype) or ptypes.is_bool_dtype(series.dtype):
        return _no_numbers(series), ~nulls
    parsed = pd.to_datetime(series, errors="coerce", format="ISO8601", utc=True)
    return _no_numbers(series), ~nulls & parsed.isna().to_numpy()


def _no_numbers(series: pd.Series) -> np.ndarray:
    return np.full(len(series), np.nan)


_TYPE_CHECKS = {
    "int": _check_int,
    "float": _as_numbers,
    "string": _check_string,
    "bool": _check_bool,
    "datetime": _check_datetime,
}
