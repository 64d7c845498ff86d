"""The served feature encoder: a fitted `FeaturePipeline` compiled into a function from raw
records (JSON objects, as a request carries them) to the float32 matrix
`FeaturePipeline.transform` builds, with plain Python and numpy: no pandas frame per request.

Rules:
- The arithmetic is the transforms' own, value for value: float64 throughout, cast to float32
  once at the end. Up to `ROW_PATH_MAX` records go through plain Python floats (the same
  IEEE-754 double operations numpy performs, without its per-call overhead), more through
  numpy columns; both are byte-identical (`check_served_features` proves it on a run's
  golden set, record by record on a sample of it, and registration refuses a version where it
  is not).
- A null is `None` or a float NaN. Numeric columns come in as float64 (NaN for nulls); one-hot
  matches a value by equality and hash as pandas does (3 matches 3.0), anything else (unseen or
  null) sets `<column>=__other__`.
- A NaN or inf left in the matrix (an unfilled null, or a value beyond `limits`) is a
  `FeatureError` naming the record and the feature, never a numpy warning.
- `limits` bound each numeric input: the value, and every value a standardize or min_max makes
  of it, must lie within float32's range, so that no feature overflows. Records are checked
  against them before encoding (`RecordChecker`), which names the limits.
- A compiled encoder only reads its state: one instance serves every thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainforge.errors import ArtifactError, DataError, FeatureMismatch

Columns = dict[str, np.ndarray]
Values = dict[str, Any]
_Apply = Callable[[Columns], Columns]
_ApplyRow = Callable[[Values], None]
_NUMERIC_KINDS = ("standardize", "min_max")
ROW_PATH_MAX = 8  # up to this many records, plain Python per record beats numpy's overhead
ROW_CHECK_MAX = 2_000  # golden rows `check_served_features` encodes record by record
FLOAT32_MAX = float(np.finfo(np.float32).max)


class FeatureError(DataError):
    """A record cannot be encoded; `record` is its index in the request, `field` the column or
    feature at fault."""

    def __init__(self, record: int, field: str, message: str) -> None:
        self.record, self.field, self.reason = record, field, message
        super().__init__(f"record {record}: field {field!r}: {message}")


def is_null(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


@dataclass(frozen=True)
class ServedEncoder:
    """Raw records to the model's float32 features, exactly as the fitted pipeline does.

    `inputs` are the raw columns it reads, `numeric` those of them read as numbers,
    `feature_names` the matrix's columns in order and `limits` the (low, high) each numeric
    input must lie within.
    """

    inputs: tuple[str, ...]
    numeric: frozenset[str]
    feature_names: tuple[str, ...]
    steps: tuple[_Apply, ...]
    row_steps: tuple[_ApplyRow, ...]
    limits: Mapping[str, tuple[float, float]]

    def encode(self, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """The (records, features) float32 matrix; records must hold every input column, each
        numeric one within its `limits`."""
        if len(records) <= ROW_PATH_MAX:
            return self.encode_rows(records)
        return self.encode_columns(records)

    def encode_columns(self, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """`encode` through numpy columns."""
        columns = {name: self._column(records, name) for name in self.inputs}
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: a FeatureError below
            for step in self.steps:
                columns.update(step(columns))
        matrix = np.empty((len(records), len(self.feature_names)), dtype=np.float64)
        for index, name in enumerate(self.feature_names):
            matrix[:, index] = _as_float(columns[name])
        return self._finite(matrix)

    def encode_rows(self, records: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """`encode` through plain Python values, record by record."""
        rows = []
        for record in records:
            values = {name: _number(record[name]) if name in self.numeric else record[name]
                      for name in self.inputs}
            for step in self.row_steps:
                step(values)
            rows.append([_number(values[name]) for name in self.feature_names])
        matrix = np.array(rows, dtype=np.float64).reshape(len(rows), len(self.feature_names))
        return self._finite(matrix)

    def _finite(self, features: np.ndarray) -> np.ndarray:
        """The float64 features as float32, or a FeatureError where one is not finite."""
        with np.errstate(over="ignore"):
            matrix = features.astype(np.float32)
        if not np.isfinite(matrix).all():
            row, col = np.argwhere(~np.isfinite(matrix))[0]
            reason = ("is null and no impute transform fills it" if np.isnan(features[row, col])
                      else "is beyond float32's range after the feature transforms (its input "
                           "is beyond the encoder's limits)")
            raise FeatureError(int(row), self.feature_names[col], reason)
        return matrix

    def _column(self, records: Sequence[Mapping[str, Any]], name: str) -> np.ndarray:
        values = [record[name] for record in records]
        if name in self.numeric:
            return _as_float(np.array(values, dtype=object))
        column = np.empty(len(values), dtype=object)
        column[:] = values
        return column


def compile_encoder(pipeline: Any) -> ServedEncoder:
    """Compile a fitted `FeaturePipeline` (its `to_json` state) into a `ServedEncoder`."""
    import json

    data = json.loads(pipeline.to_json())
    transforms: list[dict[str, Any]] = data["transforms"]
    passthrough: list[str] = data["passthrough"]
    inputs: list[str] = []
    numeric: set[str] = set(passthrough)
    produced: set[str] = set()
    for item in transforms:
        for column in item["columns"]:
            if column not in produced and column not in inputs:
                inputs.append(column)
                if _reads_numbers(item):
                    numeric.add(column)
        produced.update(item["columns"])
    inputs += [c for c in passthrough if c not in inputs]
    unknown = [item["kind"] for item in transforms if item["kind"] not in _COMPILERS]
    if unknown:
        raise ArtifactError(f"no served encoder for transform kind(s) {unknown}")
    steps = tuple(_COMPILERS[item["kind"]](item["columns"], item["state"]) for item in transforms)
    is_numeric = numeric & set(inputs)
    row_steps = []
    for item in transforms:
        row_steps.append(_ROW_COMPILERS[item["kind"]](item["columns"], item["state"],
                                                      frozenset(is_numeric)))
        is_numeric = _numeric_after(item, is_numeric)
    numeric_inputs = frozenset(numeric & set(inputs))
    return ServedEncoder(tuple(inputs), numeric_inputs, tuple(pipeline.feature_names), steps,
                         tuple(row_steps), _limits(transforms, numeric_inputs))


def check_served_features(pipeline: Any, golden: Any, run_id: str) -> None:
    """Raise `FeatureMismatch` unless the served encoder of fitted `pipeline` builds the same
    bytes as `pipeline.transform` on the golden frame of run `run_id`, naming the first row
    (from 1) and feature that differ. Every row goes through the numpy columns; record by
    record, the rows `row_check_sample` picks (a load would otherwise spend seconds on a test
    split of tens of thousands of rows)."""
    expected = pipeline.transform(golden)
    try:
        encoder = compile_encoder(pipeline)
        records = golden.to_dict(orient="records")
        served = encoder.encode_columns(records)
        rows = row_check_sample(golden, encoder)
        by_row = _encode_by_row(encoder, records, rows)
    except ArtifactError as exc:
        raise FeatureMismatch(f"run {run_id}: {exc}") from None
    except FeatureError as exc:
        raise FeatureMismatch(f"run {run_id}: the served feature encoder fails on golden row "
                              f"{exc.record + 1}: {exc}") from None
    what = f"run {run_id}: the served feature encoder"
    _compare(served, expected, np.arange(len(records)), encoder.feature_names, what)
    _compare(by_row, expected[rows], rows, encoder.feature_names, f"{what} (record by record)")


def row_check_sample(golden: Any, encoder: ServedEncoder,
                     limit: int = ROW_CHECK_MAX) -> np.ndarray:
    """Positions of the golden rows to encode record by record, ascending, at most `limit`:
    the first row of each pattern of nulls across the inputs and of each value of each
    categorical input (where plain Python and numpy differ most: nulls, category matching,
    value types), then rows evenly spaced to fill `limit`."""
    frame = golden[list(encoder.inputs)]
    first = np.flatnonzero(~frame.isna().duplicated().to_numpy())
    for name in encoder.inputs:
        if name not in encoder.numeric:
            first = np.union1d(first, np.flatnonzero(~frame[name].duplicated().to_numpy()))
    picked = first[:limit]
    rest = np.setdiff1d(np.arange(len(frame)), picked, assume_unique=True)
    spare = min(limit - len(picked), len(rest))
    if spare > 0:
        spaced = rest[np.linspace(0, len(rest) - 1, num=spare, dtype=np.int64)]
        picked = np.union1d(picked, spaced)
    return picked


def _encode_by_row(encoder: ServedEncoder, records: Sequence[Mapping[str, Any]],
                   rows: np.ndarray) -> np.ndarray:
    matrix = np.empty((len(rows), len(encoder.feature_names)), dtype=np.float32)
    for position, row in enumerate(rows.tolist()):
        try:
            matrix[position] = encoder.encode_rows([records[row]])[0]
        except FeatureError as exc:
            raise FeatureError(row, exc.field, exc.reason) from None
    return matrix


def _compare(served: np.ndarray, expected: np.ndarray, rows: np.ndarray, names: tuple[str, ...],
             what: str) -> None:
    """`served` against `expected`, whose matrix row i is golden row `rows[i]`."""
    if served.shape != expected.shape:
        raise FeatureMismatch(f"{what} builds {served.shape} features, the pipeline "
                              f"{expected.shape}")
    differs = served.view(np.uint32) != expected.view(np.uint32)
    if differs.any():
        row, col = np.argwhere(differs)[0]
        raise FeatureMismatch(
            f"{what} differs from the training transform at golden row {rows[row] + 1}, "
            f"feature {names[col]!r}: {served[row, col]!r} != {expected[row, col]!r}")


def _reads_numbers(item: dict[str, Any]) -> bool:
    if item["kind"] in _NUMERIC_KINDS:
        return True
    if item["kind"] == "impute":
        fills = item["state"]["fill"].values()
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in fills)
    return False


def _limits(transforms: list[dict[str, Any]],
            numeric: frozenset[str]) -> dict[str, tuple[float, float]]:
    """Per numeric input: the values for which it and each scaling of it stay in float32's
    range. A scaling is y = (x - shift) / scale with scale > 0, so y in [-M, M] is x in
    [shift - M * scale, shift + M * scale]; a chain is inverted from its last step back."""
    scalings: dict[str, list[tuple[float, float]]] = {name: [] for name in numeric}
    for item in transforms:
        if item["kind"] in _NUMERIC_KINDS:
            for column in item["columns"]:
                if column in scalings:
                    scalings[column].append(_scaling(item, column))
    limits = {}
    for name, chain in scalings.items():
        low, high = -FLOAT32_MAX, FLOAT32_MAX
        for end in range(1, len(chain) + 1):
            lo, hi = -FLOAT32_MAX, FLOAT32_MAX
            for shift, scale in reversed(chain[:end]):
                lo, hi = shift + lo * scale, shift + hi * scale
            low, high = max(low, lo), min(high, hi)
        limits[name] = (low, high)
    return limits


def _scaling(item: dict[str, Any], column: str) -> tuple[float, float]:
    """(shift, scale) of a standardize or min_max step on `column`, as the step computes it."""
    state = item["state"]
    if item["kind"] == "standardize":
        return state["mean"][column], state["std"][column]
    return state["min"][column], (state["max"][column] - state["min"][column]) or 1.0


def _number(value: Any) -> float:
    return math.nan if is_null(value) else float(value)


def _numeric_after(item: dict[str, Any], numeric: set[str]) -> set[str]:
    """Which columns hold numbers after transform `item` (as the columnar path has them)."""
    columns = set(item["columns"])
    if item["kind"] in _NUMERIC_KINDS:
        return numeric | columns
    if item["kind"] == "impute":
        fill = item["state"]["fill"]
        kept = {c for c in columns & numeric if isinstance(fill[c], (int, float))}
        return (numeric - columns) | kept
    outputs = {f"{c}={v}" for c in columns
               for v in [*item["state"]["categories"][c], "__other__"]}
    return numeric | outputs


def _as_float(column: np.ndarray) -> np.ndarray:
    if column.dtype == np.float64:
        return column
    if column.dtype != object:
        return column.astype(np.float64)
    return np.array([math.nan if is_null(v) else v for v in column.tolist()], dtype=np.float64)


def _standardize(columns: list[str], state: dict[str, Any]) -> _Apply:
    mean, std = state["mean"], state["std"]
    return lambda values: {c: (_as_float(values[c]) - mean[c]) / std[c] for c in columns}


def _min_max(columns: list[str], state: dict[str, Any]) -> _Apply:
    low = state["min"]
    scale = {c: (state["max"][c] - state["min"][c]) or 1.0 for c in columns}
    return lambda values: {c: (_as_float(values[c]) - low[c]) / scale[c] for c in columns}


def _impute(columns: list[str], state: dict[str, Any]) -> _Apply:
    fill = state["fill"]

    def apply(values: Columns) -> Columns:
        out = {}
        for c in columns:
            column = values[c]
            if column.dtype == np.float64 and isinstance(fill[c], (int, float)):
                out[c] = np.where(np.isnan(column), fill[c], column)
            else:
                filled = np.empty(len(column), dtype=object)
                filled[:] = [fill[c] if is_null(v) else v for v in column.tolist()]
                out[c] = filled
        return out

    return apply


def _one_hot(columns: list[str], state: dict[str, Any]) -> _Apply:
    categories: dict[str, list[Any]] = state["categories"]
    codes = {c: {value: i for i, value in reversed(list(enumerate(categories[c])))}
             for c in columns}

    def apply(values: Columns) -> Columns:
        out = {}
        for c in columns:
            other = len(categories[c])
            found = [codes[c].get(v, other) if not is_null(v) else other
                     for v in values[c].tolist()]
            block = np.zeros((len(found), other + 1))
            block[np.arange(len(found)), found] = 1.0
            for i, value in enumerate([*categories[c], "__other__"]):
                out[f"{c}={value}"] = block[:, i]
        return out

    return apply


def _standardize_row(columns: list[str], state: dict[str, Any], _: frozenset[str]) -> _ApplyRow:
    mean, std = state["mean"], state["std"]

    def apply(values: Values) -> None:
        for c in columns:
            values[c] = (_number(values[c]) - mean[c]) / std[c]

    return apply


def _min_max_row(columns: list[str], state: dict[str, Any], _: frozenset[str]) -> _ApplyRow:
    low = state["min"]
    scale = {c: (state["max"][c] - state["min"][c]) or 1.0 for c in columns}

    def apply(values: Values) -> None:
        for c in columns:
            values[c] = (_number(values[c]) - low[c]) / scale[c]

    return apply


def _impute_row(columns: list[str], state: dict[str, Any],
                numeric: frozenset[str]) -> _ApplyRow:
    fill = state["fill"]
    as_number = {c for c in columns if c in numeric and isinstance(fill[c], (int, float))}

    def apply(values: Values) -> None:
        for c in columns:
            if is_null(values[c]):
                values[c] = float(fill[c]) if c in as_number else fill[c]

    return apply


def _one_hot_row(columns: list[str], state: dict[str, Any], _: frozenset[str]) -> _ApplyRow:
    categories: dict[str, list[Any]] = state["categories"]
    codes = {c: {value: i for i, value in reversed(list(enumerate(categories[c])))}
             for c in columns}
    names = {c: [f"{c}={value}" for value in [*categories[c], "__other__"]] for c in columns}

    def apply(values: Values) -> None:
        for c in columns:
            value, other = values[c], len(categories[c])
            code = other if is_null(value) else codes[c].get(value, other)
            for i, name in enumerate(names[c]):
                values[name] = 1.0 if i == code else 0.0

    return apply


_ROW_COMPILERS: dict[str, Callable[[list[str], dict[str, Any], frozenset[str]], _ApplyRow]] = {
    "standardize": _standardize_row,
    "min_max": _min_max_row,
    "impute": _impute_row,
    "one_hot": _one_hot_row,
}

_COMPILERS: dict[str, Callable[[list[str], dict[str, Any]], _Apply]] = {
    "standardize": _standardize,
    "min_max": _min_max,
    "impute": _impute,
    "one_hot": _one_hot,
}
