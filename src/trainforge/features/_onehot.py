"""OneHot: one 0/1 column per frequent training category, plus one for everything else."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from trainforge.features._base import Scalar, Transform, ranked_values

OTHER = "__other__"


class OneHot(Transform):
    """Columns `<col>=<value>` for the kept categories, then `<col>=__other__`.

    Kept: the training values seen at least `min_frequency` times, at most `max_categories` of
    them, most frequent first (ties broken alphabetically by the value's text), in that order.
    Any other value, unseen or null, sets the `__other__` column. Numbers match by value, so
    a training category 3 still matches 3.0 in a column that gained nulls.
    """

    kind = "one_hot"

    def __init__(
        self, columns: Sequence[str], max_categories: int = 20, min_frequency: int = 1
    ) -> None:
        super().__init__(columns)
        self.max_categories = max_categories
        self.min_frequency = min_frequency

    def _params(self) -> dict[str, Any]:
        return {"max_categories": self.max_categories, "min_frequency": self.min_frequency}

    def _fit(self, frame: pd.DataFrame) -> None:
        self.categories: dict[str, list[Scalar]] = {}
        for column in self.columns:
            ranked = ranked_values(frame[column])
            kept = [value for value, count in ranked if count >= self.min_frequency]
            self.categories[column] = kept[: self.max_categories]

    def _output_names(self) -> list[str]:
        return [f"{c}={v}" for c in self.columns for v in [*self.categories[c], OTHER]]

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        blocks = [self._encode(frame[column], self.categories[column]) for column in self.columns]
        return pd.DataFrame(np.hstack(blocks), columns=self._output_names(), index=frame.index)

    @staticmethod
    def _encode(series: pd.Series, categories: list[Scalar]) -> np.ndarray:
        codes = pd.Index(categories, dtype=object).get_indexer(series.astype(object))
        codes[codes < 0] = len(categories)
        encoded = np.zeros((len(series), len(categories) + 1))
        encoded[np.arange(len(series)), codes] = 1.0
        return encoded

    def _state(self) -> dict[str, Any]:
        return {"categories": self.categories}

    def _load_state(self, state: dict[str, Any]) -> None:
        self.categories = {c: list(v) for c, v in state["categories"].items()}
