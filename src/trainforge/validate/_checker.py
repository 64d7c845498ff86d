"""`ContractChecker`: a schema contract checked over Arrow record batches, one at a time.

Rules, per contract column (in contract order), then per extra column, then the table:
- present: the column exists (else one violation counting every row, and no other checks).
- type (`_types.py`), not null (unless `nullable`), min / max (numbers below / above), allowed
  (values of the right type outside the list), regex (text not matching it whole), unique (a
  value seen before, in this batch or an earlier one: the second and later occurrences).
- max null fraction: nulls / rows over all batches, judged at the end; its rows are the nulls.
- unexpected column: columns the contract does not name, when `allow_extra_columns` is false.
- rows: the row count outside [min, max]; freshness: the newest value of the freshness column
  older than `max_age` at `now` (given, or the time `finish` runs).

Memory: per rule a count and the first 5 row locations; per `unique` column the distinct
values seen so far (one set entry each); a running maximum for freshness. Batches are
checked with pyarrow.compute (unique through pandas' hash table), never kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from trainforge.validate import _types
from trainforge.validate._contract import ColumnRule, SchemaContract
from trainforge.validate._report import ValidationReport, Violation

Locate = Callable[[int], str]
FIRST_ROWS = 5
TABLE = "(table)"
_TYPE_TEXT = {
    "int": "whole numbers (type int)",
    "float": "numbers (type float)",
    "string": "text (type string)",
    "bool": "true or false (type bool)",
    "datetime": "timestamps or ISO 8601 text (type datetime)",
}


@dataclass
class _Tally:
    """One rule's count so far and its first offending rows."""

    expected: str
    count: int = 0
    first: list[str] = field(default_factory=list)

    def add(self, mask: np.ndarray, locate: Locate) -> None:
        hits = np.flatnonzero(mask)
        self.count += len(hits)
        for row in hits[: FIRST_ROWS - len(self.first)]:
            self.first.append(locate(int(row)))


class ContractChecker:
    """Feed it batches with `update`, then read the report with `finish`."""

    def __init__(self, contract: SchemaContract, now: datetime | None = None) -> None:
        self.contract = contract
        self.now = now
        self.rows = 0
        self._columns: list[str] | None = None
        self._missing: set[str] = set()
        self._tallies: dict[tuple[str, str], _Tally] = {}
        self._seen: dict[str, set[Any]] = {}
        self._nulls: dict[str, _Tally] = {}
        self._newest: datetime | None = None
        self._newest_at = ""

    def update(self, batch: pa.RecordBatch, locate: Locate) -> np.ndarray:
        """Check one batch (`locate(i)` names its row i); the mask of its rows breaking a row
        rule (type, not null, bounds, allowed, regex, unique)."""
        if self._columns is None:
            self._columns = list(batch.schema.names)
        broken = np.zeros(batch.num_rows, bool)
        for name, rule in self.contract.columns.items():
            if name not in batch.schema.names:
                self._missing.add(name)
                continue
            broken |= self._check_column(name, rule, _types.plain(batch.column(name)), locate)
        self.rows += batch.num_rows
        return broken

    def finish(self) -> ValidationReport:
        """The report of every batch checked."""
        violations: list[Violation] = []
        for name, rule in self.contract.columns.items():
            if name in self._missing:
                violations.append(Violation(name, "present", "a column of that name", self.rows,
                                            ()))
                continue
            for (column, rule_name), tally in self._tallies.items():
                if column == name and tally.count:
                    violations.append(Violation(name, rule_name, tally.expected, tally.count,
                                                tuple(tally.first)))
            violations.extend(self._null_fraction(name, rule))
        if not self.contract.allow_extra_columns:
            expected = "only the contract's columns (allow_extra_columns is false)"
            extra = [c for c in self._columns or [] if c not in self.contract.columns]
            violations.extend(Violation(c, "unexpected column", expected, self.rows, ())
                              for c in extra)
        violations.extend(self._table_rules())
        return ValidationReport(violations=tuple(violations), rows_checked=self.rows)

    def _check_column(self, name: str, rule: ColumnRule, array: pa.Array,
                      locate: Locate) -> np.ndarray:
        missing = _types.nulls(array)
        numbers, misfit = _types.fit(array, rule.type, missing)
        checks: list[tuple[str, str, np.ndarray]] = [("type", _TYPE_TEXT[rule.type], misfit)]
        if not rule.nullable:
            checks.append(("not null", "a value in every row (nullable is false)", missing))
        if rule.min is not None:
            checks.append(("min", f">= {_number(rule.min)}", _mask(pc.less(numbers, rule.min))))
        if rule.max is not None:
            checks.append(("max", f"<= {_number(rule.max)}",
                           _mask(pc.greater(numbers, rule.max))))
        valid = ~missing & ~misfit
        if rule.allowed is not None:
            checks.append(("allowed", f"one of {rule.allowed!r}",
                           valid & ~_allowed(array, numbers, rule)))
        if rule.regex is not None and valid.any():
            matched = _mask(pc.match_substring_regex(array, f"^(?:{rule.regex})$"))
            checks.append(("regex", f"text matching {rule.regex!r} whole", valid & ~matched))
        if rule.unique:
            checks.append(("unique", "each value once (unique is true)",
                           self._repeated(name, array, ~missing)))
        if rule.max_null_fraction is not None:
            self._nulls.setdefault(name, _Tally("")).add(missing, locate)
        if self.contract.freshness is not None and self.contract.freshness.column == name:
            self._track_newest(array, valid, locate)
        broken = np.zeros(len(array), bool)
        for rule_name, expected, mask in checks:
            if rule_name != "not null" or not rule.nullable:
                self._tallies.setdefault((name, rule_name), _Tally(expected)).add(mask, locate)
            broken |= mask
        return broken

    def _repeated(self, name: str, array: pa.Array, present: np.ndarray) -> np.ndarray:
        """Values seen before (earlier in this batch, or in an earlier batch)."""
        values = array.to_pandas()
        seen = self._seen.setdefault(name, set())
        repeated = (values.duplicated(keep="first").to_numpy() | values.isin(seen).to_numpy())
        seen.update(values[present].unique().tolist())
        return repeated & present

    def _track_newest(self, array: pa.Array, valid: np.ndarray, locate: Locate) -> None:
        times = (_types.iso_times(array) if pa.types.is_string(array.type)
                 or pa.types.is_large_string(array.type) else _utc(array))
        times = times.where(valid).reset_index(drop=True)
        if times.notna().any():
            position = int(times.idxmax())
            newest = times.iloc[position].to_pydatetime()
            if self._newest is None or newest > self._newest:
                self._newest, self._newest_at = newest, locate(position)

    def _null_fraction(self, name: str, rule: ColumnRule) -> list[Violation]:
        limit = rule.max_null_fraction
        tally = self._nulls.get(name)
        if limit is None or tally is None or not self.rows or tally.count / self.rows <= limit:
            return []
        expected = (f"at most {limit:.2%} nulls (max_null_fraction {limit:g}), found "
                    f"{tally.count / self.rows:.2%}")
        return [Violation(name, "max null fraction", expected, tally.count, tuple(tally.first))]

    def _table_rules(self) -> list[Violation]:
        found: list[Violation] = []
        rows = self.contract.rows
        if rows is not None and (self.rows < rows.min or
                                 (rows.max is not None and self.rows > rows.max)):
            bound = f"between {rows.min} and {rows.max}" if rows.max is not None else \
                f"at least {rows.min}"
            found.append(Violation(TABLE, "rows", f"{bound} rows", self.rows, ()))
        fresh = self.contract.freshness
        if fresh is not None and fresh.column not in self._missing:
            now = self.now or datetime.now(timezone.utc)
            if self._newest is None:
                found.append(Violation(fresh.column, "freshness",
                                       f"a value no older than {fresh.max_age} (none found)",
                                       self.rows, ()))
            elif now - self._newest > fresh.max_age_delta:
                age = now - self._newest
                found.append(Violation(
                    fresh.column, "freshness",
                    f"the newest value no older than {fresh.max_age}; it is "
                    f"{self._newest.isoformat()}, {_age(age)} old", self.rows,
                    (self._newest_at,)))
        return found


def _allowed(array: pa.Array, numbers: pa.Array, rule: ColumnRule) -> np.ndarray:
    allowed = rule.allowed or []
    if rule.type in ("int", "float"):
        values = pa.array([float(v) for v in allowed if not isinstance(v, bool)], pa.float64())
        return _mask(pc.is_in(numbers, value_set=values))
    return _mask(pc.is_in(array, value_set=pa.array(allowed, array.type)))


def _mask(result: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(result, False).to_numpy(zero_copy_only=False), dtype=bool)


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _utc(array: pa.Array) -> pd.Series:
    series = pd.Series(array.to_pandas())
    if pa.types.is_date(array.type):
        series = pd.to_datetime(series)
    if series.dt.tz is None:
        return series.dt.tz_localize("UTC")
    return series.dt.tz_convert("UTC")


def _age(age: Any) -> str:
    hours = age.total_seconds() / 3600
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} hours"
