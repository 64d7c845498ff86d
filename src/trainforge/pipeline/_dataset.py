"""Feature matrices and targets for the three splits, as the trainer and evaluator take them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from trainforge.errors import DataError

Arrays = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Dataset:
    train: Arrays
    val: Arrays
    test: Arrays
    feature_names: tuple[str, ...]
    classes: tuple[object, ...]

    @property
    def num_features(self) -> int:
        return len(self.feature_names)


def target_values(frame: pd.DataFrame, target: str, task: str, split: str) -> np.ndarray:
    """The target column as numbers: 0/1 (binary), class ids (multiclass) or floats."""
    if target not in frame.columns:
        raise DataError(f"data.target {target!r}: no such column (have {', '.join(frame.columns)})")
    column = frame[target]
    missing = int(column.isna().sum())
    if missing:
        raise DataError(f"data.target {target!r}: {missing} missing values in the {split} split")
    if task == "regression":
        return _numeric(column, target).astype(np.float32)
    values = column.to_numpy()
    if task == "binary":
        unexpected = sorted({v for v in np.unique(values).tolist() if v not in (0, 1)})[:5]
        if unexpected:
            raise DataError(
                f"data.target {target!r}: binary task expects 0/1, found {unexpected} "
                f"in the {split} split"
            )
        return values.astype(np.float32)
    return values


def encode_classes(
    train: np.ndarray, others: list[np.ndarray]
) -> tuple[tuple[object, ...], list[np.ndarray]]:
    """Map class labels to ids 0..K-1 by the sorted labels of the training split."""
    classes = tuple(np.unique(train).tolist())
    index = {label: i for i, label in enumerate(classes)}
    encoded = []
    for values in [train, *others]:
        unseen = sorted({v for v in values.tolist() if v not in index})[:5]
        if unseen:
            raise DataError(f"data.target: classes {unseen} do not occur in the training split")
        encoded.append(np.array([index[v] for v in values.tolist()], dtype=np.int64))
    return classes, encoded


def _numeric(column: pd.Series, name: str) -> np.ndarray:
    try:
        return column.to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"data.target {name!r}: regression expects numbers: {exc}") from exc
