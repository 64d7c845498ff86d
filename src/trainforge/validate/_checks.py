"""`check_contract`: a pandas frame checked against a schema contract, through the same
`ContractChecker` that checks streamed Arrow batches.

Rules: see `_checker.py` and `_types.py`. The frame is converted to Arrow a slice of
`BATCH_ROWS` rows at a time. A pandas object column holding values of several Python types
(text and numbers, say), which Arrow cannot hold in one column, is checked as the text of its
values (nulls kept). Row locations are `locate(position)` (an `IngestResult.locate` names the
file and line), or `row <n>` counted from 1 when no `locate` is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa

from trainforge.validate._checker import ContractChecker, Locate
from trainforge.validate._contract import SchemaContract
from trainforge.validate._report import ValidationReport

BATCH_ROWS = 1 << 16


def check_contract(
    frame: pd.DataFrame, contract: SchemaContract, locate: Locate | None = None
) -> ValidationReport:
    """Check every rule of `contract` on `frame`; row locations come from `locate(position)`."""
    report, _ = check_frame(frame, contract, locate)
    return report


def check_frame(
    frame: pd.DataFrame, contract: SchemaContract, locate: Locate | None = None
) -> tuple[ValidationReport, np.ndarray]:
    """(the report, the mask of rows breaking a row rule)."""
    where = locate or (lambda row: f"row {row + 1}")
    checker = ContractChecker(contract)
    broken = np.zeros(len(frame), bool)
    for start, batch in frame_batches(frame):
        broken[start:start + batch.num_rows] = checker.update(batch, _shifted(where, start))
    return checker.finish(), broken


def frame_batches(frame: pd.DataFrame) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(first row, Arrow batch) of each slice of the frame; an empty frame gives one empty
    batch, so its columns are still seen."""
    for start in range(0, max(len(frame), 1), BATCH_ROWS):
        part = frame.iloc[start:start + BATCH_ROWS]
        arrays = [_arrow(part[name]) for name in part.columns]
        yield start, pa.RecordBatch.from_arrays(arrays, names=[str(c) for c in part.columns])


def _arrow(series: pd.Series) -> pa.Array:
    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(object)
    try:
        array = pa.array(series, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        text = series.map(lambda value: value if pd.isna(value) else str(value))
        array = pa.array(text, type=pa.string(), from_pandas=True)
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def _shifted(locate: Callable[[int], str], start: int) -> Locate:
    return lambda row: locate(start + row)
