"""Fitting a feature pipeline on training rows that are streamed, never held at once.

Each transform is fitted in its own pass(es) over the training rows, reading only the columns
the transforms so far need, as the ones before it leave them (the frame rules of
`FeaturePipeline.fit`). What each learns, and how it differs from the in-memory fit:
- standardize: count, mean and squared deviations merged batch by batch (Chan et al.); the
  population std equals the in-memory one to rounding (about 1e-15 relative);
- min_max, impute mean / most_frequent / constant, one_hot: exactly the in-memory state
  (counts are merged; ties broken as `ranked_values` breaks them);
- impute median: the exact median (`select_ranks`, two more passes), as `numpy.median` gives.
Errors are the in-memory fit's: a column with no finite value, text where numbers belong.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from trainforge.errors import DataError
from trainforge.features import FeaturePipeline, Scalar, Transform, numeric_values, ranked_values
from trainforge.streaming._selection import select_ranks

# The training rows' `columns`, batch by batch; each call is a new pass from the first row.
Frames = Callable[[Sequence[str]], Iterator[pd.DataFrame]]


def fit_streaming(pipeline: FeaturePipeline, frames: Frames) -> FeaturePipeline:
    """A fitted copy of the (unfitted) `pipeline`, learnt from the rows `frames` yields."""
    fitted: list[Transform] = []
    for transform in pipeline.transforms:
        so_far = FeaturePipeline(fitted)
        needed = list(dict.fromkeys([c for t in fitted for c in t.columns] + transform.columns))

        def prepared(so_far: FeaturePipeline = so_far,
                     needed: list[str] = needed) -> Iterator[pd.DataFrame]:
            for frame in frames(needed):
                yield so_far.transform_frame(frame)

        state = _learn(transform, prepared)
        fitted.append(type(transform).from_dict({**transform.to_dict(), "state": state}))
    return FeaturePipeline(fitted, pipeline.passthrough)


def _learn(transform: Transform, frames: Callable[[], Iterator[pd.DataFrame]]) -> dict[str, Any]:
    params = transform.to_dict()["params"]
    kind, columns = transform.kind, transform.columns
    if kind == "standardize":
        moments = _moments(frames, columns, kind)
        return {"mean": {c: m.mean for c, m in moments.items()},
                "std": {c: m.std or 1.0 for c, m in moments.items()}}
    if kind == "min_max":
        moments = _moments(frames, columns, kind)
        return {"min": {c: m.low for c, m in moments.items()},
                "max": {c: m.high for c, m in moments.items()}}
    if kind == "one_hot":
        counts = _counts(frames, columns)
        kept = {c: [v for v, n in _ranked(counts[c]) if n >= params["min_frequency"]]
                for c in columns}
        return {"categories": {c: kept[c][: params["max_categories"]] for c in columns}}
    if kind == "impute":
        return {"fill": _fill_values(transform, params, frames)}
    raise DataError(f"{kind} transform: no streaming fit for this kind")


def _fill_values(transform: Transform, params: dict[str, Any],
                 frames: Callable[[], Iterator[pd.DataFrame]]) -> dict[str, Scalar]:
    strategy, columns = params["strategy"], transform.columns
    if strategy == "mean":
        return {c: m.mean for c, m in _moments(frames, columns, "impute").items()}
    if strategy == "median":
        return {c: _median(frames, c) for c in columns}
    if strategy == "most_frequent":
        counts = _counts(frames, columns)
        for column in columns:
            if not counts[column]:
                raise DataError(f"impute transform: column {column!r} has no values to fit on")
        return {c: _ranked(counts[c])[0][0] for c in columns}
    first = next(frames(), None)
    if first is None:
        raise DataError("impute transform: no training rows to fit on")
    state = type(transform).from_dict(transform.to_dict())
    state.fit(first)  # checks the constant against the column's type
    return dict(state.to_dict()["state"]["fill"])


class _Moments:
    """Count, mean, squared deviations, min and max of finite values, merged batch by batch."""

    def __init__(self) -> None:
        self.count, self.mean, self.m2 = 0, 0.0, 0.0
        self.low, self.high = np.inf, -np.inf

    def add(self, values: np.ndarray) -> None:
        n = len(values)
        if not n:
            return
        mean = float(values.mean())
        m2 = float(((values - mean) ** 2).sum())
        total = self.count + n
        delta = mean - self.mean
        self.m2 += m2 + delta * delta * self.count * n / total
        self.mean += delta * n / total
        self.count = total
        self.low, self.high = min(self.low, float(values.min())), max(self.high,
                                                                      float(values.max()))

    @property
    def std(self) -> float:
        return float(np.sqrt(self.m2 / self.count))


def _finite(frame: pd.DataFrame, column: str, kind: str) -> np.ndarray:
    values = numeric_values(frame, column, kind)
    return values[np.isfinite(values)]


def _moments(frames: Callable[[], Iterator[pd.DataFrame]], columns: Sequence[str],
             kind: str) -> dict[str, _Moments]:
    moments = {c: _Moments() for c in columns}
    rows = 0
    for frame in frames():
        rows += len(frame)
        for column in columns:
            moments[column].add(_finite(frame, column, kind))
    for column, moment in moments.items():
        if moment.count == 0:
            raise DataError(f"{kind} transform: column {column!r} has no finite values to fit "
                            f"on ({rows} rows)")
    return moments


def _counts(frames: Callable[[], Iterator[pd.DataFrame]],
            columns: Sequence[str]) -> dict[str, Counter[Scalar]]:
    counts: dict[str, Counter[Scalar]] = {c: Counter() for c in columns}
    for frame in frames():
        for column in columns:
            counts[column].update(dict(ranked_values(frame[column])))
    return counts


def _ranked(counts: Counter[Scalar]) -> list[tuple[Scalar, int]]:
    """Most frequent first, ties by the value's text (`ranked_values`' order)."""
    return sorted(counts.items(), key=lambda pair: (-pair[1], str(pair[0])))


def _median(frames: Callable[[], Iterator[pd.DataFrame]], column: str) -> float:
    def chunks() -> Iterator[tuple[np.ndarray, None]]:
        for frame in frames():
            yield _finite(frame, column, "impute"), None

    count, picked = select_ranks(chunks, lambda n: sorted({(n - 1) // 2, n // 2}))
    if count == 0:
        raise DataError(f"impute transform: column {column!r} has no finite values to fit on")
    return float(np.mean([picked[0].value, picked[-1].value]))
