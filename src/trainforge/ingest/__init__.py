"""Ingest: list the files a source names (local, file://, s3:// through fsspec), stream them
as Arrow record batches or read them into one frame, name exactly which bytes were read and
where each row lies in them; read a source's column names without its rows.

Names are imported on first use (`trainforge._lazy`): `read_columns` comes without pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.ingest._formats import count_rows, csv_rows_without_parsing, file_batches
    from trainforge.ingest._hashing import HashCache, file_sha256, stat_key
    from trainforge.ingest._read import read_table, source_fingerprint
    from trainforge.ingest._reopen import option_names, reopen_filesystem
    from trainforge.ingest._result import IngestResult, SourceFile, content_id, data_version_of
    from trainforge.ingest._sources import (
        Format,
        SourceFileInfo,
        SourceListing,
        list_source_files,
        read_columns,
    )
    from trainforge.ingest._stream import (
        DEFAULT_BATCH_ROWS,
        SourceBatch,
        StoredLineMaps,
        check_columns,
        iter_batches,
        with_partitions,
    )

_EXPORTS = {
    "DEFAULT_BATCH_ROWS": "trainforge.ingest._stream",
    "Format": "trainforge.ingest._sources",
    "HashCache": "trainforge.ingest._hashing",
    "IngestResult": "trainforge.ingest._result",
    "SourceBatch": "trainforge.ingest._stream",
    "SourceFile": "trainforge.ingest._result",
    "SourceFileInfo": "trainforge.ingest._sources",
    "SourceListing": "trainforge.ingest._sources",
    "StoredLineMaps": "trainforge.ingest._stream",
    "check_columns": "trainforge.ingest._stream",
    "content_id": "trainforge.ingest._result",
    "count_rows": "trainforge.ingest._formats",
    "csv_rows_without_parsing": "trainforge.ingest._formats",
    "data_version_of": "trainforge.ingest._result",
    "file_batches": "trainforge.ingest._formats",
    "file_sha256": "trainforge.ingest._hashing",
    "iter_batches": "trainforge.ingest._stream",
    "list_source_files": "trainforge.ingest._sources",
    "option_names": "trainforge.ingest._reopen",
    "read_columns": "trainforge.ingest._sources",
    "read_table": "trainforge.ingest._read",
    "reopen_filesystem": "trainforge.ingest._reopen",
    "source_fingerprint": "trainforge.ingest._read",
    "stat_key": "trainforge.ingest._hashing",
    "with_partitions": "trainforge.ingest._stream",
}

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "Format",
    "HashCache",
    "IngestResult",
    "SourceBatch",
    "SourceFile",
    "SourceFileInfo",
    "SourceListing",
    "StoredLineMaps",
    "check_columns",
    "content_id",
    "count_rows",
    "csv_rows_without_parsing",
    "data_version_of",
    "file_batches",
    "file_sha256",
    "iter_batches",
    "list_source_files",
    "option_names",
    "read_columns",
    "read_table",
    "reopen_filesystem",
    "source_fingerprint",
    "stat_key",
    "with_partitions",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
