"""Ingest: read a file or glob of parquet / csv files, name exactly which bytes were read and
where each row lies in them; read a source's column names without its rows."""

from __future__ import annotations

from trainforge.ingest._read import read_columns, read_table
from trainforge.ingest._result import IngestResult, SourceFile

__all__ = ["IngestResult", "SourceFile", "read_columns", "read_table"]
