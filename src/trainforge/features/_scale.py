"""Numeric rescaling: Standardize (z-score) and MinMax (to [0, 1]).

Statistics are taken over the finite values of the training column (nulls skipped); nulls
stay NaN in the output, for an earlier Impute to prevent.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from trainforge.features._base import Transform, finite_values, numeric_values


class Standardize(Transform):
    """(x - mean) / std with the training mean and population std (ddof=0); std 0 becomes 1."""

    kind = "standardize"

    def _fit(self, frame: pd.DataFrame) -> None:
        self.mean: dict[str, float] = {}
        self.std: dict[str, float] = {}
        for column in self.columns:
            values = finite_values(frame, column, self.kind)
            self.mean[column] = float(values.mean())
            self.std[column] = float(values.std()) or 1.0

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = {
            c: (numeric_values(frame, c, self.kind) - self.mean[c]) / self.std[c]
            for c in self.columns
        }
        return pd.DataFrame(out, index=frame.index)

    def _state(self) -> dict[str, Any]:
        return {"mean": self.mean, "std": self.std}

    def _load_state(self, state: dict[str, Any]) -> None:
        self.mean, self.std = dict(state["mean"]), dict(state["std"])


class MinMax(Transform):
    """(x - min) / (max - min) with the training min and max; a constant column maps to 0.

    Values outside the training range map outside [0, 1]; they are not clipped.
    """

    kind = "min_max"

    def _fit(self, frame: pd.DataFrame) -> None:
        self.min: dict[str, float] = {}
        self.max: dict[str, float] = {}
        for column in self.columns:
            values = finite_values(frame, column, self.kind)
            self.min[column], self.max[column] = float(values.min()), float(values.max())

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = {}
        for c in self.columns:
            scale = (self.max[c] - self.min[c]) or 1.0
            out[c] = (numeric_values(frame, c, self.kind) - self.min[c]) / scale
        return pd.DataFrame(out, index=frame.index)

    def _state(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max}

    def _load_state(self, state: dict[str, Any]) -> None:
        self.min, self.max = dict(state["min"]), dict(state["max"])
