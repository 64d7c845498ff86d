"""The schema contract: one rule per expected column, read from YAML.

    columns:
      transaction_id: {type: string, unique: true, regex: "tx-[0-9]+"}
      amount: {type: float, nullable: false, min: 0, max: 50000}
      merchant_category: {type: string, allowed: [grocery, travel]}
      device: {type: string, max_null_fraction: 0.05}
      ts: {type: datetime}
    allow_extra_columns: true
    rows: {min: 1000, max: 10000000}
    freshness: {column: ts, max_age: 36h}

Rules:
- `type` is required; `nullable` defaults to false (a null breaks the "not null" rule).
- `min` / `max` apply to int and float columns only; `allowed` to all but datetime columns, and
  its values must be of the column's type (quote text such as 'yes' or 'no', which YAML would
  otherwise read as true / false).
- `regex` applies to string columns: each value must match it whole (RE2 syntax, as Arrow's
  compute functions read it; checked when the contract is read).
- `unique: true`: no value twice in the whole data (nulls aside); the second and later
  occurrences break it.
- `max_null_fraction`: at most this share of the rows may be null. It allows nulls (so
  `nullable: false` beside it is an error) and is judged over all rows.
- `rows`: the row count must lie in [min, max]. `freshness`: the newest value of `column` (a
  datetime column of the contract) must be at most `max_age` old (`90m`, `36h`, `7d`, `2w`);
  timestamps without a zone are read as UTC.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from trainforge.config import load_model

ColumnType = Literal["int", "float", "string", "bool", "datetime"]

_ALLOWED_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "string": (str,),
    "bool": (bool,),
}


class ColumnRule(BaseModel):
    """What every value of one column must satisfy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: ColumnType
    nullable: bool = False
    min: float | None = None
    max: float | None = None
    allowed: list[bool | int | float | str] | None = Field(None, min_length=1)
    regex: str | None = None
    unique: bool = False
    max_null_fraction: float | None = Field(None, ge=0, le=1)

    @model_validator(mode="before")
    @classmethod
    def _nulls_allowed_by_a_fraction(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("max_null_fraction") is not None:
            if data.get("nullable") is False:
                raise ValueError("max_null_fraction allows nulls; drop nullable: false")
            return {**data, "nullable": True}
        return data

    @field_validator("regex")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            import pyarrow as pa
            import pyarrow.compute as pc

            try:
                pc.match_substring_regex(pa.array([""]), pattern)
            except pa.ArrowInvalid as exc:
                raise ValueError(f"not a regular expression (RE2 syntax): {exc}") from None
        return pattern

    @model_validator(mode="after")
    def _check(self) -> ColumnRule:
        if self.regex is not None and self.type != "string":
            raise ValueError(f"regex applies to string columns, not {self.type}")
        numeric = self.type in ("int", "float")
        if (self.min is not None or self.max is not None) and not numeric:
            raise ValueError(f"min and max apply to int and float columns, not {self.type}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min:g}) is greater than max ({self.max:g})")
        if self.allowed is not None:
            self._check_allowed()
        return self

    def _check_allowed(self) -> None:
        if self.type not in _ALLOWED_TYPES:
            raise ValueError(f"allowed does not apply to {self.type} columns")
        wrong = [v for v in self.allowed or [] if not _is_kind(v, _ALLOWED_TYPES[self.type])]
        if wrong:
            raise ValueError(
                f"allowed values of a {self.type} column must be {self.type} values, "
                f"got {wrong!r} (quote text values in YAML)"
            )


class RowsRule(BaseModel):
    """How many rows the data must have."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min: int = Field(0, ge=0)
    max: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _check(self) -> RowsRule:
        if self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max})")
        return self


class FreshnessRule(BaseModel):
    """How old the newest value of a datetime column may be."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    column: str
    max_age: str

    @field_validator("max_age")
    @classmethod
    def _duration(cls, text: str) -> str:
        parse_duration(text)
        return text

    @property
    def max_age_delta(self) -> timedelta:
        return parse_duration(self.max_age)


class SchemaContract(BaseModel):
    """The columns a frame must have, whether it may have others, and the table's rules."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    columns: dict[str, ColumnRule]
    allow_extra_columns: bool = True
    rows: RowsRule | None = None
    freshness: FreshnessRule | None = None

    @model_validator(mode="after")
    def _fresh_column(self) -> SchemaContract:
        if self.freshness is not None:
            rule = self.columns.get(self.freshness.column)
            if rule is None or rule.type != "datetime":
                raise ValueError(f"freshness.column {self.freshness.column!r}: expected a "
                                 "datetime column of the contract")
        return self

    @field_validator("columns")
    @classmethod
    def _not_empty(cls, columns: dict[str, ColumnRule]) -> dict[str, ColumnRule]:
        if not columns:
            raise ValueError("expected at least one column")
        return columns


def load_contract(path: str | Path) -> SchemaContract:
    """Read a contract YAML; a SpecError names the file, field path and what was expected."""
    return load_model(SchemaContract, Path(path))


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """`90m`, `36h`, `7d`, `2w`, `30s` as a timedelta; ValueError saying what is expected."""
    match = _DURATION.match(str(text))
    if not match:
        raise ValueError(f"expected a duration such as 90m, 36h, 7d or 2w, got {text!r}")
    return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def _is_kind(value: object, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)
