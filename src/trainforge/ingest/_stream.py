"""`iter_batches`: the rows of a data source as Arrow record batches, file by file, never all
at once, each batch knowing where its rows lie.

Rules:
- Files come in path order (`list_source_files`); every file must have the same set of columns
  as the first (order may differ: batches keep their file's order); hive partition columns are
  appended to each batch, typed as `SourceListing.partition_types` says. A file holding a
  column of a partition's name is a DataError.
- `SourceBatch.locate(i)` names row `i` of the batch as a user opening the file finds it:
  `"<name> line <L> (row <n>)"` for CSV and JSON Lines (`L` the line an editor shows), `"<name>
  row <n>"` for Parquet, `<name>` relative to the files' common parent. A text file's lines are
  scanned on the first location asked of it, then kept for the rest of the iteration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from trainforge.config import Credentials
from trainforge.errors import DataError
from trainforge.ingest._csv import jsonl_lines, record_lines
from trainforge.ingest._formats import file_batches, open_text
from trainforge.ingest._hashing import file_sha256
from trainforge.ingest._reopen import reopen_filesystem
from trainforge.ingest._result import SourceFile
from trainforge.ingest._sources import Format, SourceFileInfo, SourceListing, list_source_files

DEFAULT_BATCH_ROWS = 65_536


@dataclass(frozen=True)
class SourceBatch:
    """Rows `first_row` .. `first_row + len(batch) - 1` (from 0) of file `file_index`."""

    file_index: int
    file: SourceFileInfo
    name: str
    first_row: int
    batch: pa.RecordBatch
    _lines: Callable[[int], np.ndarray | None] = field(repr=False, compare=False)

    @property
    def path(self) -> str:
        return self.file.path

    def locate(self, row: int) -> str:
        """Where row `row` of this batch lies in its file."""
        within = self.first_row + row
        lines = self._lines(self.file_index)
        if lines is None or within >= len(lines):
            return f"{self.name} row {within + 1}"
        return f"{self.name} line {lines[within]} (row {within + 1})"


class LineMaps:
    """The lines of each text file's rows, scanned once on first use (None for Parquet, and
    for a file whose scan does not find `rows` rows when `rows` is known)."""

    def __init__(self, listing: SourceListing, rows: Callable[[int], int | None]) -> None:
        self._listing = listing
        self._rows = rows
        self._lines: dict[int, np.ndarray | None] = {}

    def __call__(self, index: int) -> np.ndarray | None:
        if index not in self._lines:
            self._lines[index] = _scan_lines(self._listing.fs, self._listing.files[index],
                                             self._rows(index))
        return self._lines[index]


class StoredLineMaps:
    """The line maps of files read earlier from `source` (a stored `IngestResult`'s), opened
    again from their paths, with the storage options `credentials` give for the source
    (`ingest/_reopen.py`), and scanned once on first use: a file whose bytes no longer hash to
    those read, or that cannot be opened here, gets none."""

    def __init__(self, files: Sequence[SourceFile], source: str,
                 credentials: Credentials) -> None:
        self._files = files
        self._source = source
        self._credentials = credentials
        self._lines: dict[int, np.ndarray | None] = {}

    def __call__(self, index: int) -> np.ndarray | None:
        if index not in self._lines:
            self._lines[index] = self._scan(self._files[index])
        return self._lines[index]

    def _scan(self, file: SourceFile) -> np.ndarray | None:
        if file.format == "parquet":
            return None
        try:
            fs = reopen_filesystem(self._source, (), self._credentials)
            path = fs._strip_protocol(file.path)
            if file_sha256(fs, path) != (file.size, file.sha256):
                return None
            info = SourceFileInfo(path, file.name, file.size, file.format, file.compression)
            return _scan_lines(fs, info, file.rows)
        except Exception:  # noqa: BLE001 - a remote file system raises its own (botocore's)
            return None  # unreadable here: its rows are named by row


def _scan_lines(fs: Any, file: SourceFileInfo, rows: int | None) -> np.ndarray | None:
    """The line each row of the text file starts on (None for Parquet, and when a scan does
    not find `rows` rows)."""
    opener = lambda: open_text(fs, file)  # noqa: E731
    if file.format == "csv":
        return record_lines(opener, rows)
    if file.format == "jsonl":
        return jsonl_lines(opener, rows)
    return None


def iter_batches(
    source: str,
    format: Format = "auto",
    storage_options: Mapping[str, Any] | None = None,
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Iterator[SourceBatch]:
    """Every row of `source` as record batches (at most `batch_rows` rows from Parquet, one
    parser block from CSV / JSON Lines).

    >>> for part in iter_batches("s3://bucket/events/date=*/*.parquet"):  # doctest: +SKIP
    ...     part.batch.num_rows, part.locate(0)
    (65536, 'date=2024-01-01/part-0.parquet row 1')
    """
    listing = list_source_files(source, format, storage_options)
    yield from listing_batches(listing, LineMaps(listing, lambda index: None), batch_rows)


def listing_batches(
    listing: SourceListing, lines: Callable[[int], np.ndarray | None], batch_rows: int
) -> Iterator[SourceBatch]:
    """The batches of the listed files; `lines(i)` gives file `i`'s row lines for `locate`."""
    names = listing.names()
    partition_types = listing.arrow_partition_types()
    expected: set[str] | None = None
    for index, file in enumerate(listing.files):
        schema, batches = file_batches(listing.fs, file, batch_rows)
        expected = check_columns(listing, index, schema, expected)
        row = 0
        for batch in batches:
            out = with_partitions(batch, file, partition_types)
            yield SourceBatch(index, file, names[index], row, out, lines)
            row += batch.num_rows


def check_columns(listing: SourceListing, index: int, schema: pa.Schema,
                  expected: set[str] | None) -> set[str]:
    """The column names of file `index`, which must be `expected` (the first file's) and must
    not clash with its partition columns."""
    file = listing.files[index]
    found = set(schema.names)
    clash = sorted(found & {name for name, _ in file.partitions})
    if clash:
        raise DataError(f"{file.path}: column {clash[0]!r} is also a partition folder "
                        f"({clash[0]}=...); rename one of them")
    if expected is None or found == expected:
        return found
    missing = ", ".join(sorted(expected - found)) or "none"
    extra = ", ".join(sorted(found - expected)) or "none"
    raise DataError(f"{file.path}: columns differ from {listing.files[0].path}: missing "
                    f"{missing}; extra {extra}")


def with_partitions(batch: pa.RecordBatch, file: SourceFileInfo,
                    types: dict[str, pa.DataType]) -> pa.RecordBatch:
    """The batch with the file's partition columns appended."""
    for name, value in file.partitions:
        kind = types[name]
        typed = None if value is None else int(value) if kind == pa.int64() else value
        batch = batch.append_column(name, pa.array([typed] * batch.num_rows, type=kind))
    return batch
