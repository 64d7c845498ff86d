"""The Transform contract: fit on the training split, then map any frame the same way.

Rules:
- A transform reads only its `columns`; `transform` returns a frame with the same index whose
  columns are `output_names()`, which replace the inputs in the caller's frame.
- `fit` learns state from the frame it is given and nothing else; that state, with the
  constructor parameters, is all `to_dict` writes, and `from_dict` restores it exactly.
- The base guards, subclasses hook: `transform` / `output_names` before `fit` raise
  TrainforgeError; a missing input column raises DataError naming it. Subclasses implement
  `_fit`, `_transform`, `_state`, `_load_state`, and `_params` / `_output_names` when they differ.
- A transform is not thread-safe while fitting; a fitted one only reads its state.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from trainforge.errors import DataError, TrainforgeError

Scalar = bool | int | float | str


class Transform(ABC):
    """A fitted, JSON-serialisable mapping from input columns to output columns."""

    kind: ClassVar[str]

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self._fitted = False

    @property
    def is_fitted(self) -> bool:
        return self._fitted

    def fit(self, frame: pd.DataFrame) -> None:
        """Learn this transform's state from `frame` (the training split)."""
        self._require_columns(frame)
        self._fit(frame)
        self._fitted = True

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The output columns for `frame`'s rows, computed with the fitted state."""
        self._require_fitted("transform")
        self._require_columns(frame)
        return self._transform(frame)

    def output_names(self) -> list[str]:
        """The columns `transform` returns, in order."""
        self._require_fitted("output_names")
        return self._output_names()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: kind, columns, constructor params and fitted state (None before fit)."""
        state = self._state() if self._fitted else None
        return {
            "kind": self.kind,
            "columns": list(self.columns),
            "params": self._params(),
            "state": state,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Transform:
        """Rebuild a transform written by `to_dict`, fitted state included.

        Call it on the concrete class; `FeaturePipeline.from_json` picks the class by kind.
        """
        if data.get("kind") != cls.kind:
            raise TrainforgeError(
                f"{cls.__name__}.from_dict: expected kind {cls.kind!r}, got {data.get('kind')!r}"
            )
        transform = cls(data["columns"], **data["params"])
        if data["state"] is not None:
            transform._load_state(data["state"])
            transform._fitted = True
        return transform

    def _require_fitted(self, method: str) -> None:
        if not self._fitted:
            raise TrainforgeError(
                f"{self.kind} transform of {self.columns}: {method}() called before fit()"
            )

    def _require_columns(self, frame: pd.DataFrame) -> None:
        for column in self.columns:
            if column not in frame.columns:
                available = ", ".join(map(str, frame.columns))
                raise DataError(
                    f"{self.kind} transform: column {column!r} not found; "
                    f"the frame has: {available}"
                )

    def _params(self) -> dict[str, Any]:
        return {}

    def _output_names(self) -> list[str]:
        return list(self.columns)

    @abstractmethod
    def _fit(self, frame: pd.DataFrame) -> None: ...

    @abstractmethod
    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame: ...

    @abstractmethod
    def _state(self) -> dict[str, Any]: ...

    @abstractmethod
    def _load_state(self, state: dict[str, Any]) -> None: ...


def numeric_values(frame: pd.DataFrame, column: str, kind: str) -> np.ndarray:
    """The column as float64 (NaN for nulls); DataError when it does not hold numbers."""
    series = frame[column]
    if not (ptypes.is_numeric_dtype(series.dtype) or ptypes.is_bool_dtype(series.dtype)):
        raise DataError(
            f"{kind} transform: column {column!r} holds {series.dtype} values; expected numbers"
        )
    return series.to_numpy(dtype=np.float64, na_value=np.nan)


def finite_values(frame: pd.DataFrame, column: str, kind: str) -> np.ndarray:
    """The finite numbers of a training column; DataError when there are none to learn from."""
    values = numeric_values(frame, column, kind)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        raise DataError(
            f"{kind} transform: column {column!r} has no finite values to fit on "
            f"({len(values)} rows)"
        )
    return finite


def ranked_values(series: pd.Series) -> list[tuple[Scalar, int]]:
    """Non-null values with their counts: most frequent first, ties by the value's text."""
    counts = series.value_counts(dropna=True)
    pairs = [(to_scalar(value, series.name), int(count)) for value, count in counts.items()]
    return sorted(pairs, key=lambda pair: (-pair[1], str(pair[0])))


def to_scalar(value: Any, column: Any) -> Scalar:
    """A JSON-safe Python scalar for a cell value; DataError for timestamps and other objects."""
    value = value.item() if isinstance(value, np.generic) else value
    if not isinstance(value, (bool, int, float, str)):
        raise DataError(
            f"column {column!r} holds {type(value).__name__} values; "
            "expected text, numbers or true/false"
        )
    return value
