"""The target column checked against the task, and the feature matrices and targets of the three
splits as the trainer and evaluator take them.

Rules for `data.target`:
- It must be a column of the data with a value in every row; regression needs numbers.
- Binary: values 0/1 (or true/false) need no `data.positive_label`. Any other values must be
  exactly two, and `positive_label` names the positive one (encoded 1; the other 0); the
  classes are then recorded as (negative, positive). A label matches a value equal to it, a
  number matches its text (`'1'` and 1), and true / false match the text YAML reads as them
  (yes, no, on, off, y, n), so `positive_label: yes` finds "yes".
- Multiclass: class ids 0..K-1 follow the sorted labels of the training split.
- Errors name the data source and, through `locate`, the file and line of the first rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from trainforge.config import DataSpec
from trainforge.errors import DataError
from trainforge.pipeline._columns import Label, list_columns, same_label, suggest_column

if TYPE_CHECKING:
    from trainforge.train import BatchSource

Arrays = tuple[np.ndarray, np.ndarray]
Locate = Callable[[int], str]

_EXAMPLES = 5


@dataclass(frozen=True)
class Dataset:
    """The splits as the trainer and evaluator take them; with `data.streaming` the training
    rows are a `BatchSource` read while training (`trainforge.streaming.StreamingSource`)."""

    train: Arrays | BatchSource
    val: Arrays
    test: Arrays
    feature_names: tuple[str, ...]
    classes: tuple[object, ...]

    @property
    def num_features(self) -> int:
        return len(self.feature_names)


def check_target(
    frame: pd.DataFrame, data: DataSpec, task: str, locate: Locate | None = None, source: str = ""
) -> None:
    """DataError unless `data.target` of `frame` can train `task` (the module's rules); `source`
    (the data file or glob) starts the message and `locate(position)` names rows."""
    where = locate or (lambda row: f"row {row + 1}")
    name = f"{source + ': ' if source else ''}data.target {data.target!r}"
    if data.target not in frame.columns:
        known = [str(c) for c in frame.columns]
        raise DataError(f"{name}: no such column{suggest_column(data.target, known)}; the "
                        f"columns are: {list_columns(known)}")
    column = frame[data.target]
    nulls = column.isna().to_numpy()
    if nulls.any():
        raise DataError(f"{name}: {_count(int(nulls.sum()), 'missing value')} "
                        f"(first: {_rows(nulls, where)})")
    if task == "regression":
        numbers = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
        other = ~np.isfinite(numbers)
        if other.any():
            raise DataError(f"{name}: a regression target needs finite numbers, found "
                            f"{_count(int(other.sum()), 'other value')} "
                            f"(first: {_rows(other, where)})")
    if task == "binary":
        binary_classes(column, data.positive_label, where, name)


def binary_classes(
    column: pd.Series, positive_label: Label | None, locate: Locate | None = None,
    name: str = "data.target",
) -> tuple[object, ...]:
    """The classes of a binary target: () for 0/1 or true/false values and no positive label,
    else (negative, positive). DataError, naming `name` and the values found, otherwise."""
    where = locate or (lambda row: f"row {row + 1}")
    firsts = np.flatnonzero(~column.duplicated().to_numpy())
    values = column.iloc[firsts].tolist()
    if len(values) > 2 or (positive_label is None and len(values) == 1
                           and not _zero_or_one(values[0])):
        found = ", ".join(f"{value!r} (first: {where(int(row))})"
                          for value, row in zip(values[:_EXAMPLES], firsts, strict=False))
        more = f", ... ({len(values) - _EXAMPLES} more)" if len(values) > _EXAMPLES else ""
        raise DataError(
            f"{name}: a binary target holds 0/1, true/false, or two values and "
            f"data.positive_label naming the positive one; found "
            f"{_count(len(values), 'value')}: {found}{more}"
        )
    if positive_label is None:
        if all(_zero_or_one(v) for v in values):
            return ()
        raise DataError(f"{name}: holds {values[0]!r} and {values[1]!r}, not 0/1; set "
                        "data.positive_label to the one that is the positive class")
    matches = [i for i, value in enumerate(values) if same_label(value, positive_label)]
    if not matches:
        shown = ", ".join(map(repr, values))
        raise DataError(f"{name}: data.positive_label {positive_label!r} is none of its "
                        f"values ({shown})")
    if len(values) == 1:
        raise DataError(f"{name}: holds {values[0]!r} only; a binary task needs a second value")
    return (values[1 - matches[0]], values[matches[0]])


def encode_targets(
    parts: Sequence[pd.DataFrame], data: DataSpec, task: str
) -> tuple[tuple[object, ...], list[np.ndarray]]:
    """(classes, targets of each part) as the trainer takes them: 0/1 float32 (binary), class
    ids by the sorted labels of the first part (multiclass), float32 (regression). The parts
    hold a target `check_target` passed; the classes name the label of each id."""
    columns = [part[data.target] for part in parts]
    if task == "regression":
        return (), [pd.to_numeric(c).to_numpy(dtype=np.float32) for c in columns]
    if task == "multiclass":
        train, *others = [c.to_numpy() for c in columns]
        return encode_classes(train, others)
    classes = binary_classes(pd.concat(columns, ignore_index=True), data.positive_label)
    if not classes:
        return (), [c.to_numpy(dtype=np.float32) for c in columns]
    positive = classes[1]
    return classes, [(c.to_numpy(dtype=object) == positive).astype(np.float32) for c in columns]


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


def _zero_or_one(value: object) -> bool:
    return isinstance(value, (bool, int, float)) and value in (0, 1)


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def _rows(mask: np.ndarray, where: Locate) -> str:
    return ", ".join(where(int(i)) for i in np.flatnonzero(mask)[:_EXAMPLES])
