"""`DatasetProfile`: every column's `ColumnProfile` and the row count, built from record
batches in one pass and merged across files, partitions or days.

Rules:
- Columns are keyed by name; a column missing from one side of a merge keeps the other side's
  profile, and the merged row count is the sum (so its nulls no longer account for every row:
  schema drift reports the difference).
- Stored as canonical JSON bytes (`to_bytes` / `from_bytes`), a damaged one is a DataError.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from trainforge.errors import DataError
from trainforge.profiles._column import ColumnProfile

PROFILE_FORMAT = 1


@dataclass
class DatasetProfile:
    rows: int = 0
    columns: dict[str, ColumnProfile] = field(default_factory=dict)

    @classmethod
    def from_batches(cls, batches: Iterable[pa.RecordBatch]) -> DatasetProfile:
        profile = cls()
        for batch in batches:
            profile.update(batch)
        return profile

    def update(self, batch: pa.RecordBatch) -> None:
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            if name not in self.columns:
                self.columns[name] = ColumnProfile.empty(column.type)
            self.columns[name].update(column)
        self.rows += batch.num_rows

    def merge(self, other: DatasetProfile) -> DatasetProfile:
        """The profile of both sets of rows (a new object)."""
        merged = DatasetProfile(self.rows + other.rows)
        for name in [*self.columns, *(n for n in other.columns if n not in self.columns)]:
            mine, theirs = self.columns.get(name), other.columns.get(name)
            if mine is not None and theirs is not None:
                merged.columns[name] = mine.merge(theirs)
            else:
                only = mine if mine is not None else theirs
                assert only is not None
                merged.columns[name] = ColumnProfile.from_dict(only.to_dict())
        return merged

    def summary(self) -> dict[str, Any]:
        return {"rows": self.rows,
                "columns": {name: column.summary() for name, column in self.columns.items()}}

    def to_bytes(self) -> bytes:
        body = {"format": PROFILE_FORMAT, "rows": self.rows,
                "columns": {name: column.to_dict() for name, column in self.columns.items()}}
        return json.dumps(body, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> DatasetProfile:
        try:
            body = json.loads(data)
            return cls(int(body["rows"]), {name: ColumnProfile.from_dict(column)
                                           for name, column in body["columns"].items()})
        except (ValueError, KeyError, TypeError, RuntimeError) as exc:
            raise DataError(f"{where}: not a data profile: {exc}") from None


def merge_all(profiles: Iterable[DatasetProfile]) -> DatasetProfile:
    merged = DatasetProfile()
    for profile in profiles:
        merged = merged.merge(profile)
    return merged
