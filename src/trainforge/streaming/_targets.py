"""The target column encoded as the trainer takes it, one window of rows at a time, with the
classes learnt before streaming (`pipeline/_dataset.encode_targets` for rows in memory)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from trainforge.errors import DataError


@dataclass(frozen=True)
class TargetEncoder:
    """`classes`: () for a binary 0/1 target or a regression, (negative, positive) for a
    binary target with other labels, the sorted labels of a multiclass one (ids by position)."""

    column: str
    task: str
    classes: tuple[object, ...] = ()

    @property
    def dtype(self) -> torch.dtype:
        return torch.int64 if self.task == "multiclass" else torch.float32

    def encode(self, values: pd.Series, locate: Callable[[int], str]) -> np.ndarray:
        """int64 class ids (multiclass) or float32; DataError naming the first row whose value
        is missing or not one the encoder knows."""
        name = f"data.target {self.column!r}"
        missing = values.isna().to_numpy()
        if missing.any():
            raise DataError(f"{name}: a missing value ({locate(int(np.argmax(missing)))})")
        if self.task == "regression":
            numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
            return self._checked(numbers.astype(np.float32), ~np.isfinite(numbers), values,
                                 locate, "a finite number")
        if self.task == "binary" and not self.classes:
            numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
            return self._checked(numbers.astype(np.float32), ~np.isin(numbers, (0.0, 1.0)),
                                 values, locate, "0 or 1")
        labels = pd.Index(self.classes, dtype=object).get_indexer(values.astype(object))
        known = ", ".join(map(repr, self.classes))
        if self.task == "binary":
            return self._checked(labels.astype(np.float32), labels < 0, values, locate,
                                 f"one of {known}")
        return self._checked(labels.astype(np.int64), labels < 0, values, locate,
                             f"a class of the training split ({known})")

    def _checked(self, encoded: np.ndarray, bad: np.ndarray, values: pd.Series,
                 locate: Callable[[int], str], expected: str) -> np.ndarray:
        if bad.any():
            row = int(np.argmax(bad))
            value = values.iloc[row]
            value = value.item() if isinstance(value, np.generic) else value
            raise DataError(f"data.target {self.column!r}: {value!r} at "
                            f"{locate(row)}; expected {expected}")
        return encoded
