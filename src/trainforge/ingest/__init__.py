"""Ingest: read a file or glob of parquet / csv files, and name exactly which bytes were read."""

from __future__ import annotations

from trainforge.ingest._read import read_table
from trainforge.ingest._result import IngestResult, SourceFile

__all__ = ["IngestResult", "SourceFile", "read_table"]
