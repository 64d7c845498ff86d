"""Train / validation / test for data that is streamed: which part each row belongs to, decided
row by row from its key, so any row group can be split alone, in any order, by any process.

Rules (the sizes are `split_sizes`' exactly, as for a frame):
- Every row has a key: `random`, (a 64-bit hash of (seed, row number), row number); `time`,
  (the time column's value, row number), the row number counting from 0 over the source's row
  groups in order. Ties in time therefore go by position, as the frame's stable sort orders them.
- time: the smallest `train` keys are train, the next `val` validation, the rest test (no train
  row is later than any test row). random: the smallest `test` keys are test, the next `val`
  validation, the rest train.
- The two cut keys come from exact order statistics over all keys (`select_ranks`); the time
  column is the only data read to find them.
- The time column must hold numbers, dates or timestamps and no nulls; errors name the file and
  row.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from trainforge.config import SplitSpec
from trainforge.errors import DataError
from trainforge.split import split_sizes
from trainforge.streaming._row_groups import RowGroupPlan
from trainforge.streaming._selection import RankedValue, select_ranks

TRAIN, VAL, TEST = 0, 1, 2
PART_NAMES = ("train", "val", "test")
_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True, eq=False)
class StreamSplit:
    """The part of every row of a plan's row groups (module rules), and each group's rows per
    part."""

    plan: RowGroupPlan
    spec: SplitSpec
    cuts: tuple[RankedValue, RankedValue]
    counts: np.ndarray  # (groups, 3): rows of train, val, test in each group

    @property
    def columns(self) -> list[str]:
        """The columns `parts` reads."""
        time = self.spec.time_column
        return [time] if self.spec.method == "time" and time is not None else []

    @property
    def starts(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.plan.rows)[:-1]]).astype(np.int64)

    def parts(self, group: int, table: pa.Table | None = None) -> np.ndarray:
        """TRAIN, VAL or TEST for each row of group `group`; `table` holds its `columns` (read
        here when not given)."""
        values, rows = self._keys(group, table)
        first, second = self.cuts
        before_first = _before(values, rows, first)
        before_second = _before(values, rows, second)
        low, middle, high = (TEST, VAL, TRAIN) if self.spec.method == "random" else (
            TRAIN, VAL, TEST)
        return np.where(before_first, low, np.where(before_second, middle, high)).astype(np.int8)

    def _keys(self, group: int, table: pa.Table | None) -> tuple[np.ndarray, np.ndarray]:
        start = int(self.starts[group])
        rows = np.arange(start, start + self.plan.groups[group].rows, dtype=np.int64)
        if self.spec.method == "random":
            return row_hashes(self.spec.seed, rows), rows
        if table is None:
            table = self.plan.read(group, self.columns)
        return time_values(self.plan, group, table, self.spec.time_column or ""), rows


def plan_split(plan: RowGroupPlan, spec: SplitSpec) -> StreamSplit:
    """The cut keys of `spec` over the plan's rows, and each group's rows per part."""
    if spec.method == "time" and spec.time_column not in plan.schema.names:
        raise DataError(f"split: time column {spec.time_column!r} not found; the columns are: "
                        f"{', '.join(plan.schema.names)}")
    n_train, n_val, n_test = split_sizes(plan.total_rows, spec)
    first = n_test if spec.method == "random" else n_train
    probe = StreamSplit(plan, spec, (RankedValue(0, 0), RankedValue(0, 0)),
                        np.zeros((0, 3), dtype=np.int64))

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for group in range(len(plan.groups)):
            yield probe._keys(group, None)

    _, cuts = select_ranks(chunks, lambda n: [first, first + n_val])
    split = StreamSplit(plan, spec, (cuts[0], cuts[1]), np.zeros((0, 3), dtype=np.int64))
    counts = np.array([np.bincount(split.parts(g), minlength=3) for g in range(len(plan.groups))],
                      dtype=np.int64).reshape(-1, 3)
    return StreamSplit(plan, spec, split.cuts, counts)


def row_hashes(seed: int, rows: np.ndarray) -> np.ndarray:
    """splitmix64 of (seed, row): uniform 64-bit keys, the same on every machine."""
    with np.errstate(over="ignore"):
        z = rows.astype(np.uint64) + np.uint64(seed & 0xFFFF_FFFF_FFFF_FFFF) * _MIX + _MIX
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def time_values(plan: RowGroupPlan, group: int, table: pa.Table, column: str) -> np.ndarray:
    """The time column of a group as comparable numbers (timestamps and dates as integers)."""
    values = table.column(column)
    kind = values.type
    if values.null_count:
        nulls = np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))
        first = ", ".join(plan.groups[group].locate(int(row)) for row in nulls[:5])
        raise DataError(f"split: time column {column!r} has {values.null_count} missing "
                        f"value(s) (first: {first}); rows without a time cannot be ordered")
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind) or pa.types.is_time(kind):
        values = values.cast(pa.int64() if kind.bit_width == 64 else pa.int32())
    elif not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        raise DataError(f"{plan.groups[group].file.path}: split: time column {column!r} holds "
                        f"{kind} values; data.streaming orders rows by numbers, dates or "
                        "timestamps")
    return values.to_numpy()


def _before(values: np.ndarray, rows: np.ndarray, cut: RankedValue) -> np.ndarray:
    """Which (value, row) keys sort before `cut`."""
    return (values < cut.value) | ((values == cut.value) & (rows < cut.row))
