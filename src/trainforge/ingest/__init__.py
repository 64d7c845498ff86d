"""Ingest: read a file or glob of parquet / csv files, name exactly which bytes were read and
where each row lies in them; read a source's column names without its rows.

Names are imported on first use (`trainforge._lazy`): `read_columns` comes without pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.ingest._read import read_table
    from trainforge.ingest._result import IngestResult, SourceFile
    from trainforge.ingest._sources import read_columns

_EXPORTS = {
    "IngestResult": "trainforge.ingest._result",
    "SourceFile": "trainforge.ingest._result",
    "read_columns": "trainforge.ingest._sources",
    "read_table": "trainforge.ingest._read",
}

__all__ = ["IngestResult", "SourceFile", "read_columns", "read_table"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
