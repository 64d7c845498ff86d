"""The Parquet row groups of a source: the units the streaming loader reads, found from the
files' footers without reading a row.

Rules:
- Only Parquet: a row group is the smallest part of a file that can be read alone. Any other
  file is a DataError naming it and what `data.streaming` needs.
- Groups come in file path order, then by their index in the file; a group knows its file, its
  first row in that file and its row count. Every file must hold the first file's columns.
- `read(i, columns)` reads one group's `columns` (hive partition columns appended, typed as the
  listing says); a file changed or removed since the plan was made is a DataError naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from trainforge.errors import DataError
from trainforge.ingest import SourceFileInfo, SourceListing, with_partitions

_READ_ERRORS = (ValueError, OSError, pa.ArrowException)


@dataclass(frozen=True)
class RowGroup:
    """Rows `first_row` .. `first_row + rows - 1` (from 0) of `file`: its row group `index`."""

    file: SourceFileInfo
    index: int
    first_row: int
    rows: int

    def locate(self, offset: int) -> str:
        """Where row `offset` of this group lies in its file."""
        return f"{self.file.name} row {self.first_row + offset + 1}"


@dataclass(frozen=True, eq=False)
class RowGroupPlan:
    """The row groups of a listing, and how to read one of them."""

    listing: SourceListing
    groups: tuple[RowGroup, ...]
    schema: pa.Schema

    @classmethod
    def from_listing(cls, listing: SourceListing) -> RowGroupPlan:
        """Read every file's footer; DataError for a file that is not Parquet or cannot be
        read, or whose columns differ from the first file's."""
        groups: list[RowGroup] = []
        schema: pa.Schema | None = None
        for file in listing.files:
            if file.format != "parquet":
                raise DataError(f"{file.path}: data.streaming reads Parquet row groups; this "
                                f"file is {file.format.upper()} (convert it to Parquet, or "
                                "set data.streaming: false)")
            metadata, file_schema = _footer(listing, file)
            schema = _same_columns(file, file_schema, schema, listing)
            first = 0
            for index in range(metadata.num_row_groups):
                rows = metadata.row_group(index).num_rows
                if rows:
                    groups.append(RowGroup(file, index, first, rows))
                first += rows
        assert schema is not None  # a listing names at least one file
        for name, kind in listing.arrow_partition_types().items():
            schema = schema.append(pa.field(name, kind))
        return cls(listing, tuple(groups), schema)

    @cached_property
    def rows(self) -> np.ndarray:
        """The row count of each group."""
        return np.array([group.rows for group in self.groups], dtype=np.int64)

    @property
    def total_rows(self) -> int:
        return int(self.rows.sum())

    def read(self, index: int, columns: Sequence[str]) -> pa.Table:
        """The `columns` of group `index` (partition columns among them come from its path)."""
        group = self.groups[index]
        partitions = {name for name, _ in group.file.partitions}
        stored = [c for c in columns if c not in partitions]
        try:
            with self.listing.fs.open(group.file.path, "rb") as handle:
                table = pq.ParquetFile(handle).read_row_group(group.index, columns=stored)
        except FileNotFoundError:
            raise DataError(f"{group.file.path}: removed after the source was listed") from None
        except _READ_ERRORS as exc:
            raise DataError(f"{group.file.path}: cannot read row group {group.index}: "
                            f"{exc}") from None
        if table.num_rows != group.rows:
            raise DataError(f"{group.file.path}: row group {group.index} holds "
                            f"{table.num_rows} rows, {group.rows} when the source was listed; "
                            "the file changed during the run")
        batch = with_partitions(table.combine_chunks().to_batches()[0], group.file,
                                self.listing.arrow_partition_types())
        wanted = [c for c in columns if c in batch.schema.names]
        return pa.Table.from_batches([batch]).select(wanted)


def _footer(listing: SourceListing, file: SourceFileInfo) -> tuple[pq.FileMetaData, pa.Schema]:
    try:
        with listing.fs.open(file.path, "rb") as handle:
            parquet = pq.ParquetFile(handle)
            return parquet.metadata, parquet.schema_arrow
    except FileNotFoundError:
        raise DataError(f"{file.path}: removed after the source was listed") from None
    except _READ_ERRORS as exc:
        raise DataError(f"{file.path}: not a readable Parquet file ({exc})") from None


def _same_columns(file: SourceFileInfo, schema: pa.Schema, first: pa.Schema | None,
                  listing: SourceListing) -> pa.Schema:
    pandas_index = [name for name in schema.names if name.startswith("__index_level_")]
    for name in pandas_index:
        schema = schema.remove(schema.get_field_index(name))
    if first is None or set(schema.names) == set(first.names):
        return first or schema
    missing = ", ".join(sorted(set(first.names) - set(schema.names))) or "none"
    extra = ", ".join(sorted(set(schema.names) - set(first.names))) or "none"
    raise DataError(f"{file.path}: columns differ from {listing.files[0].path}: missing "
                    f"{missing}; extra {extra}")

