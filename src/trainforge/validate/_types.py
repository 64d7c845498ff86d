"""Whether each value of an Arrow column fits a contract type, and its value as a number.

Rules (the contract's types, whatever file format the column came from):
- A null, or a floating NaN, is a null: it fits every type (the "not null" rule judges it).
- int: integer columns; floating values that are whole numbers (CSVs with gaps give floats);
  text holding a whole number. float: integer and floating columns; text holding a number.
  Numbers written as text count as numbers; bools and timestamps never do.
- string: text columns (dictionary-encoded too). bool: bool columns.
- datetime: timestamp and date columns; text in ISO 8601 (a date, a date and time, with or
  without an offset).
- `fit` returns each value as float64 where it is a number that fits (null elsewhere), and the
  mask of non-null values that do not fit. Vectorised with pyarrow.compute; ISO text is parsed
  by pandas' ISO 8601 parser, which reads the offsets Arrow's cast does not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    import pandas as pd

NUMBER_TEXT = r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$"

Fit = tuple[pa.Array, np.ndarray]


def plain(array: pa.Array) -> pa.Array:
    """The array with dictionary encoding removed and chunks combined."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    return array


def nulls(array: pa.Array) -> np.ndarray:
    """Null, or NaN in a floating column."""
    mask = array.is_null()
    if pa.types.is_floating(array.type):
        mask = pc.or_(mask, pc.fill_null(pc.is_nan(array), False))
    return _numpy(mask)


def fit(array: pa.Array, kind: str, missing: np.ndarray) -> Fit:
    """(float64 numbers, misfit mask) of `array` for the contract type `kind`."""
    return _FITS[kind](array, missing)


def as_numbers(array: pa.Array, missing: np.ndarray) -> Fit:
    if pa.types.is_integer(array.type) or pa.types.is_floating(array.type):
        numbers = pc.cast(array, pa.float64())
        return _without(numbers, missing), np.zeros(len(array), bool)
    if _is_text(array):
        numeric = pc.fill_null(pc.match_substring_regex(array, NUMBER_TEXT), False)
        texts = pc.if_else(numeric, array, pa.scalar(None, array.type))
        numbers = pc.cast(pc.utf8_trim_whitespace(texts), pa.float64())
        return numbers, ~missing & ~_numpy(numeric)
    return _no_numbers(array), ~missing


def _int(array: pa.Array, missing: np.ndarray) -> Fit:
    numbers, misfit = as_numbers(array, missing)
    if pa.types.is_integer(array.type):
        return numbers, misfit
    whole = pc.fill_null(pc.equal(numbers, pc.floor(numbers)), True)
    return numbers, misfit | ~_numpy(whole)


def _string(array: pa.Array, missing: np.ndarray) -> Fit:
    return _no_numbers(array), (np.zeros(len(array), bool) if _is_text(array) else ~missing)


def _bool(array: pa.Array, missing: np.ndarray) -> Fit:
    fits = pa.types.is_boolean(array.type)
    return _no_numbers(array), np.zeros(len(array), bool) if fits else ~missing


def _datetime(array: pa.Array, missing: np.ndarray) -> Fit:
    if pa.types.is_timestamp(array.type) or pa.types.is_date(array.type):
        return _no_numbers(array), np.zeros(len(array), bool)
    if not _is_text(array):
        return _no_numbers(array), ~missing
    return _no_numbers(array), ~missing & iso_times(array).isna().to_numpy()


def iso_times(array: pa.Array) -> pd.Series:
    """Text parsed as ISO 8601 into a pandas Series of UTC timestamps (NaT where not)."""
    import pandas as pd

    return pd.to_datetime(array.to_pandas(), errors="coerce", format="ISO8601", utc=True)


def _is_text(array: pa.Array) -> bool:
    return pa.types.is_string(array.type) or pa.types.is_large_string(array.type)


def _no_numbers(array: pa.Array) -> pa.Array:
    return pa.nulls(len(array), pa.float64())


def _without(numbers: pa.Array, missing: np.ndarray) -> pa.Array:
    return pc.if_else(pa.array(missing), pa.scalar(None, pa.float64()), numbers)


def _numpy(mask: pa.Array) -> np.ndarray:
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


_FITS: dict[str, Callable[[pa.Array, np.ndarray], Fit]] = {
    "int": _int,
    "float": as_numbers,
    "string": _string,
    "bool": _bool,
    "datetime": _datetime,
}
