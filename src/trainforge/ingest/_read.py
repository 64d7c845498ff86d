"""Reading every file of a data source into one DataFrame.

Rules:
- Files and their columns as `iter_batches` reads them (`_stream.py`): path order, the same set
  of columns in every file (the first file's order wins), hive partition columns last.
- A file's batches are cast to the widest type any of them has (a CSV column widened part way,
  see `_formats.py`); files are concatenated with Arrow's permissive promotion (int64 with
  float64 gives float64), or, where Arrow has none (int64 with string), as pandas concatenates
  them (object). The frame has a fresh RangeIndex.
- Each file is hashed (sha256 of its bytes as stored, compressed or not; `_hashing.py`), an
  unchanged local file only once when a `hash_cache` is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import pyarrow as pa

from trainforge.errors import DataError
from trainforge.ingest._formats import file_batches
from trainforge.ingest._hashing import HashCache, file_sha256
from trainforge.ingest._result import IngestResult, SourceFile, content_id
from trainforge.ingest._sources import Format, SourceListing, list_source_files
from trainforge.ingest._stream import (
    DEFAULT_BATCH_ROWS,
    LineMaps,
    check_columns,
    with_partitions,
)


def read_table(
    source: str,
    format: Format = "auto",
    storage_options: Mapping[str, Any] | None = None,
    *,
    hash_cache: HashCache | None = None,
) -> IngestResult:
    """Read every file `source` names into one frame, remembering where each row came from.

    >>> result = read_table("data/transactions-*.parquet")  # doctest: +SKIP
    >>> result.locate(0), result.fingerprint[:12]  # doctest: +SKIP
    ('transactions-01.parquet row 1', '3f1c0a9e2b7d')
    """
    listing = list_source_files(source, format, storage_options)
    tables = _file_tables(listing)
    files = tuple(
        SourceFile(file.path, file.name, *file_sha256(listing.fs, file.path, hash_cache),
                   table.num_rows, file.format, file.compression)
        for file, table in zip(listing.files, tables, strict=True)
    )
    if sum(f.rows for f in files) == 0:
        raise DataError(f"{source}: contains no rows ({len(files)} file(s) read)")
    frame = _concat(tables)
    lines = LineMaps(listing, lambda index: files[index].rows)
    return IngestResult(frame=frame, files=files, source=source, lines=lines)


def source_fingerprint(
    source: str,
    format: Format = "auto",
    storage_options: Mapping[str, Any] | None = None,
    *,
    hash_cache: HashCache | None = None,
) -> str:
    """A content id of the files `source` names, without reading their rows: a local file's
    sha256 (from `hash_cache` while its stat is unchanged, so an unchanged file is not read
    again), a remote one's checksum from its store (S3's ETag and modification time). What
    a cached ingest step is keyed by."""
    listing = list_source_files(source, format, storage_options)
    return content_id(
        (file.name, file_sha256(listing.fs, file.path, hash_cache)[1] if "://" not in file.path
         else f"checksum:{listing.fs.checksum(file.path)}")
        for file in listing.files)


def _file_tables(listing: SourceListing) -> list[pa.Table]:
    partition_types = listing.arrow_partition_types()
    tables: list[pa.Table] = []
    expected: set[str] | None = None
    for index, file in enumerate(listing.files):
        schema, batches = file_batches(listing.fs, file, DEFAULT_BATCH_ROWS)
        expected = check_columns(listing, index, schema, expected)
        parts = [with_partitions(batch, file, partition_types) for batch in batches]
        empty = with_partitions(pa.RecordBatch.from_pylist([], schema=schema), file,
                                partition_types)
        widest = _widest([empty.schema, *(p.schema for p in parts)])
        tables.append(pa.Table.from_batches([p.cast(widest) for p in parts], schema=widest))
    return tables


def _widest(schemas: list[pa.Schema]) -> pa.Schema:
    """The first schema with each column's type widened to hold every schema's: the same
    type, float64 for mixed numbers, else string."""
    fields = []
    for field in schemas[0]:
        kinds = {schema.field(field.name).type for schema in schemas}
        if len(kinds) > 1:
            numeric = all(pa.types.is_integer(k) or pa.types.is_floating(k) for k in kinds)
            field = field.with_type(pa.float64() if numeric else pa.string())
        fields.append(field)
    return pa.schema(fields, metadata=schemas[0].metadata)


def _concat(tables: list[pa.Table]) -> pd.DataFrame:
    names = tables[0].column_names
    kept = [table.select(names) for table in tables]
    try:
        whole = pa.concat_tables(kept, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        frames = [table.to_pandas() for table in kept if table.num_rows]
        return pd.concat(frames, ignore_index=True)
    return whole.to_pandas()
