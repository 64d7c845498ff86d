"""Rows set aside by `on_fail: quarantine`: the rows breaking a row rule of the contract,
written to one Parquet file with where each came from.

Rules:
- The file holds the offending rows' columns as read, plus `_source_row`: the row's location
  (`rows.csv line 12 (row 11)`). Written a batch at a time (bounded memory), to a temporary
  name renamed into place by `close`, so a reader never sees half a file.
- Batches whose types differ from the first (a CSV column widened part way) are cast to the
  first batch's types where Arrow can; a value that cannot be is written as null (its
  `_source_row` still names it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SOURCE_ROW = "_source_row"


class QuarantineWriter:
    """Collects offending rows into `path` (see the module rules); `rows` counts them."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.rows = 0
        self._partial = self.path.with_name(f".{self.path.name}.partial")
        self._writer: pq.ParquetWriter | None = None
        self._schema: pa.Schema | None = None

    def write(self, batch: pa.RecordBatch, broken: np.ndarray,
              locate: Callable[[int], str]) -> None:
        if not broken.any():
            return
        rows = np.flatnonzero(broken)
        bad = batch.take(pa.array(rows))
        table = pa.Table.from_batches([bad]).append_column(
            SOURCE_ROW, pa.array([locate(int(row)) for row in rows], pa.string()))
        if self._writer is None or self._schema is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._schema = table.schema
            self._writer = pq.ParquetWriter(self._partial, self._schema)
        self._writer.write_table(_like(table, self._schema))
        self.rows += len(rows)

    def close(self) -> Path | None:
        """Finish the file; its path, or None when no row was quarantined."""
        if self._writer is None:
            return None
        self._writer.close()
        os.replace(self._partial, self.path)
        return self.path


def _like(table: pa.Table, schema: pa.Schema) -> pa.Table:
    columns = []
    for field in schema:
        column = table.column(field.name)
        try:
            columns.append(column.cast(field.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            columns.append(pa.nulls(len(column), field.type))
    return pa.Table.from_arrays(columns, schema=schema)
