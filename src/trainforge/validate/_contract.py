"""The schema contract: one rule per expected column, read from YAML.

    columns:
      amount: {type: float, nullable: false, min: 0, max: 50000}
      merchant_category: {type: string, allowed: [grocery, travel]}
      ts: {type: datetime}
    allow_extra_columns: true

Rules:
- `type` is required; `nullable` defaults to false (a null breaks the "not null" rule).
- `min` / `max` apply to int and float columns only; `allowed` to all but datetime columns, and
  its values must be of the column's type (quote text such as 'yes' or 'no', which YAML would
  otherwise read as true / false).
"""

from __future__ import annotations

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

    @model_validator(mode="after")
    def _check(self) -> ColumnRule:
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


class SchemaContract(BaseModel):
    """The columns a frame must have, and whether it may have others."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    columns: dict[str, ColumnRule]
    allow_extra_columns: bool = True

    @field_validator("columns")
    @classmethod
    def _not_empty(cls, columns: dict[str, ColumnRule]) -> dict[str, ColumnRule]:
        if not columns:
            raise ValueError("expected at least one column")
        return columns


def load_contract(path: str | Path) -> SchemaContract:
    """Read a contract YAML; a SpecError names the file, field path and what was expected."""
    return load_model(SchemaContract, Path(path))


def _is_kind(value: object, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)
