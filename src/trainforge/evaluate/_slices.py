"""Metrics per slice of the evaluated rows, and the largest gap between slices.

Rules:
- A slice column is any column of the raw rows (feature, target or neither; another name is a
  `DataError` naming `evaluation.slices`). Its rows are
  grouped by value; a numeric or datetime column (not boolean) with more distinct values than
  `buckets` is cut into `buckets` quantile buckets of these rows (`pandas.qcut`, equal edges
  merged), labelled by their interval `(low, high]`. Missing values form the slice `missing`.
- Each slice reports its `rows` and every metric of the task; a metric its rows cannot define
  (one class for ROC-AUC, ...) is None (`null` in JSON), not an error.
- The gap of a metric in one column is the largest minus the smallest value over that column's
  slices with at least `min_rows` rows and a defined value (two such slices needed); the
  report's gap of a metric is the largest over the columns. A metric no column gives a gap
  has none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from trainforge.errors import DataError

MetricFn = Callable[[np.ndarray, np.ndarray], dict[str, float]]
MISSING = "missing"


@dataclass(frozen=True)
class SliceReport:
    """`slices`: column -> slice label -> {"rows": n, metric: value or None}; `column_gaps`:
    column -> metric -> gap; `gaps`: metric -> the largest gap over the columns."""

    slices: dict[str, dict[str, dict[str, Any]]]
    column_gaps: dict[str, dict[str, float]]
    gaps: dict[str, float]


def slice_metrics(
    frame: pd.DataFrame, columns: Sequence[str], y_true: np.ndarray, scores: np.ndarray,
    metrics: MetricFn, *, buckets: int = 4, min_rows: int = 1,
) -> SliceReport:
    """The metrics (`metrics(y_true, scores)` of a subset) of each slice of each column of
    `frame`, whose rows align with `y_true` and `scores`."""
    assert len(frame) == len(y_true) == len(scores), "slice rows align with the scores"
    unknown = [column for column in columns if column not in frame.columns]
    if unknown:
        known = ", ".join(map(str, frame.columns))
        raise DataError(f"evaluation.slices: {unknown[0]!r} is not a column of the data; its "
                        f"columns are: {known}")
    slices: dict[str, dict[str, dict[str, Any]]] = {}
    column_gaps: dict[str, dict[str, float]] = {}
    for column in columns:
        labels = slice_labels(frame[column], buckets)
        slices[column] = {}
        for label, rows in _groups(labels):
            values = metrics(y_true[rows], scores[rows])
            slices[column][label] = {"rows": len(rows), **{
                name: None if math.isnan(value) else value for name, value in values.items()}}
        column_gaps[column] = _gaps(slices[column], min_rows)
    gaps: dict[str, float] = {}
    for per_metric in column_gaps.values():
        for name, gap in per_metric.items():
            gaps[name] = max(gap, gaps.get(name, gap))
    return SliceReport(slices, column_gaps, gaps)


def slice_labels(values: pd.Series, buckets: int) -> pd.Series:
    """The slice label (text) of each value by the module's rules, as a categorical in the
    values' order (buckets low to high, `missing` last)."""
    bucketed = (pd.api.types.is_numeric_dtype(values) or pd.api.types.is_datetime64_any_dtype(
        values)) and not pd.api.types.is_bool_dtype(values)
    present = values.dropna()
    if bucketed and present.nunique() > buckets:
        intervals = pd.qcut(present, buckets, duplicates="drop")
        labels = intervals.map(lambda i: f"({_text(i.left)}, {_text(i.right)}]").astype(str)
        order = [f"({_text(i.left)}, {_text(i.right)}]" for i in intervals.cat.categories]
    else:
        labels = present.map(_text).astype(str)
        order = list(dict.fromkeys(_text(v) for v in sorted(present.unique(), key=_sort_key)))
    if len(present) < len(values):
        order.append(MISSING)
    full = pd.Series(MISSING, index=values.index, dtype=object)
    full[present.index] = labels
    return full.astype(pd.CategoricalDtype(order, ordered=True))


def _groups(labels: pd.Series) -> list[tuple[str, np.ndarray]]:
    """(label, row positions) of each slice, in the labels' category order."""
    codes = labels.cat.codes.to_numpy()
    return [(str(label), np.flatnonzero(codes == code))
            for code, label in enumerate(labels.cat.categories) if (codes == code).any()]


def _gaps(slices: dict[str, dict[str, Any]], min_rows: int) -> dict[str, float]:
    values: dict[str, list[float]] = {}
    for figures in slices.values():
        if figures["rows"] < min_rows:
            continue
        for name, value in figures.items():
            if name != "rows" and value is not None:
                values.setdefault(name, []).append(value)
    return {name: max(seen) - min(seen) for name, seen in values.items() if len(seen) >= 2}


def _sort_key(value: object) -> tuple[int, Any]:
    """Numbers (and other comparable values of one type) by value; mixed types by text."""
    return (0, value) if isinstance(value, (int, float, np.number)) else (1, str(value))


def _text(value: object) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}"
    return str(value)
