"""Ingest: list the files a source names (local, file://, s3:// through fsspec), stream them
as Arrow record batches or read them into one frame, name exactly which bytes were read and
where each row lies in them; read a source's column names without its rows.

Names are imported on first use (`trainforge._lazy`): `read_columns` comes without pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.ingest._read import read_table
    from trainforge.ingest._result import IngestResult, SourceFile
    from trainforge.ingest._sources import (
        SourceFileInfo,
        SourceListing,
        list_source_files,
        read_columns,
    )
    from trainforge.ingest._stream import SourceBatch, iter_batches

_EXPORTS = {
    "IngestResult": "trainforge.ingest._result",
    "SourceBatch": "trainforge.ingest._stream",
    "SourceFile": "trainforge.ingest._result",
    "SourceFileInfo": "trainforge.ingest._sources",
    "SourceListing": "trainforge.ingest._sources",
    "iter_batches": "trainforge.ingest._stream",
    "list_source_files": "trainforge.ingest._sources",
    "read_columns": "trainforge.ingest._sources",
    "read_table": "trainforge.ingest._read",
}

__all__ = [
    "IngestResult",
    "SourceBatch",
    "SourceFile",
    "SourceFileInfo",
    "SourceListing",
    "iter_batches",
    "list_source_files",
    "read_columns",
    "read_table",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
