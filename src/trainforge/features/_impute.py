"""Impute: fill nulls with a value learned from the training split (or a given constant)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from trainforge.errors import DataError, SpecError
from trainforge.features._base import Scalar, Transform, finite_values, ranked_values

Strategy = Literal["mean", "median", "most_frequent", "constant"]


class Impute(Transform):
    """Nulls (and NaN) become the column's fill value; other values pass unchanged.

    Fill values: mean / median of the finite training values (numeric columns only);
    most_frequent training value (ties broken alphabetically by its text; numbers or text);
    constant `fill_value` (a number for a numeric column, text for a text column).
    Numeric columns come out as float64; other columns as objects.
    """

    kind = "impute"

    def __init__(
        self,
        columns: Sequence[str],
        strategy: Strategy = "median",
        fill_value: Scalar | None = None,
    ) -> None:
        super().__init__(columns)
        if strategy == "constant" and fill_value is None:
            raise SpecError(
                [f"impute transform of {list(columns)}: strategy 'constant' needs fill_value"]
            )
        self.strategy = strategy
        self.fill_value = fill_value

    def _params(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "fill_value": self.fill_value}

    def _fit(self, frame: pd.DataFrame) -> None:
        self.fill: dict[str, Scalar] = {c: self._learn(frame, c) for c in self.columns}

    def _learn(self, frame: pd.DataFrame, column: str) -> Scalar:
        if self.strategy == "mean":
            return float(finite_values(frame, column, self.kind).mean())
        if self.strategy == "median":
            return float(np.median(finite_values(frame, column, self.kind)))
        if self.strategy == "most_frequent":
            ranked = ranked_values(frame[column])
            if not ranked:
                raise DataError(f"impute transform: column {column!r} has no values to fit on")
            return ranked[0][0]
        return self._checked_constant(frame[column], column)

    def _checked_constant(self, series: pd.Series, column: str) -> Scalar:
        assert self.fill_value is not None
        numeric = _is_numeric(series)
        if numeric != isinstance(self.fill_value, (int, float)):
            expected = "a number" if numeric else "text"
            raise DataError(
                f"impute transform: fill_value {self.fill_value!r} does not fit "
                f"column {column!r} ({series.dtype}); expected {expected}"
            )
        return self.fill_value

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame(
            {c: _filled(frame[c], self.fill[c]) for c in self.columns}, index=frame.index
        )

    def _state(self) -> dict[str, Any]:
        return {"fill": self.fill}

    def _load_state(self, state: dict[str, Any]) -> None:
        self.fill = dict(state["fill"])


def _is_numeric(series: pd.Series) -> bool:
    return ptypes.is_numeric_dtype(series.dtype) and not ptypes.is_bool_dtype(series.dtype)


def _filled(series: pd.Series, value: Scalar) -> pd.Series:
    if _is_numeric(series) and isinstance(value, (int, float)):
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        return pd.Series(np.where(np.isnan(values), value, values), index=series.index)
    return series.astype(object).where(series.notna(), value)
