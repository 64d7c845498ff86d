"""Dividing rows into train / validation / test as a SplitSpec says.

Rules:
- Sizes: test = round(n * test_fraction), val = round(n * val_fraction), train = the rest;
  every split must end up with at least one row.
- random: positions come from `numpy.random.default_rng(seed).permutation(n)`: the first
  `test` of them are test, the next `val` are validation; each split keeps the frame's order.
- time: rows are stably sorted by `time_column`; the earliest are train, then validation, and the
  latest are test, so no train row is later than any test row. The column may hold no nulls;
  the error names the first rows without one by `locate(position)` (`row <n>`, from 1, without).
- Each split gets a fresh RangeIndex; the input frame is not changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from trainforge.config import SplitSpec
from trainforge.errors import DataError


@dataclass(frozen=True, eq=False)
class Splits:
    """The three parts of one frame; together they hold every row exactly once.

    `positions` holds, per part (train, val, test), the position in the input frame of each of
    its rows, so an error about a part's row can name where the row came from.
    """

    train: pd.DataFrame
    val: pd.DataFrame
    test: pd.DataFrame
    positions: tuple[np.ndarray, np.ndarray, np.ndarray]


def split_frame(
    frame: pd.DataFrame, spec: SplitSpec, locate: Callable[[int], str] | None = None
) -> Splits:
    """Split `frame` by `spec.method` ("random" or "time"); `locate` names a row position in
    errors (`IngestResult.locate`: its file and line)."""
    n_train, n_val, n_test = split_sizes(len(frame), spec)
    if spec.method == "time":
        where = locate or (lambda row: f"row {row + 1}")
        order = _time_order(frame, spec, where)
        train, val, test = np.split(order, [n_train, n_train + n_val])
    else:
        order = np.random.default_rng(spec.seed).permutation(len(frame))
        test, val, train = (np.sort(p) for p in np.split(order, [n_test, n_test + n_val]))
    train_part, val_part, test_part = (
        frame.iloc[rows].reset_index(drop=True) for rows in (train, val, test))
    return Splits(train_part, val_part, test_part, positions=(train, val, test))


def split_sizes(rows: int, spec: SplitSpec) -> tuple[int, int, int]:
    """(train, val, test) row counts of `rows` rows; DataError when one would be empty."""
    n_test, n_val = round(rows * spec.test_fraction), round(rows * spec.val_fraction)
    sizes = {"train": rows - n_test - n_val, "val": n_val, "test": n_test}
    empty = [name for name, size in sizes.items() if size <= 0]
    if empty:
        raise DataError(
            f"split: {rows} rows are too few for val_fraction={spec.val_fraction} and "
            f"test_fraction={spec.test_fraction}: the {' and '.join(empty)} split would be empty"
        )
    return sizes["train"], sizes["val"], sizes["test"]


def _time_order(
    frame: pd.DataFrame, spec: SplitSpec, where: Callable[[int], str]
) -> np.ndarray:
    column = spec.time_column
    if column not in frame.columns:
        available = ", ".join(map(str, frame.columns))
        raise DataError(f"split: time column {column!r} not found; the columns are: {available}")
    missing = frame[column].isna().to_numpy()
    if missing.any():
        count = int(missing.sum())
        first = ", ".join(where(int(row)) for row in np.flatnonzero(missing)[:5])
        raise DataError(
            f"split: time column {column!r} has {count} missing value{'s' * (count != 1)} "
            f"(first: {first}); rows without a time cannot be ordered"
        )
    return frame[column].argsort(kind="stable").to_numpy()
