"""Which files a data source names, their format, and their column names without their rows.

Nothing here imports pandas: `read_columns` is what `trainforge validate` uses to check the
columns a spec names, and it reads only a Parquet footer (pyarrow) or a CSV header line.
"""

from __future__ import annotations

import glob
import os
from typing import Literal

from trainforge.errors import DataError, DataNotFound
from trainforge.ingest._csv import header

Format = Literal["auto", "parquet", "csv"]
FileFormat = Literal["parquet", "csv"]

_EXTENSIONS: dict[str, FileFormat] = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def match_files(source: str) -> list[str]:
    paths = sorted(os.path.abspath(p) for p in glob.glob(source, recursive=True))
    files = [p for p in paths if os.path.isfile(p)]
    if not files:
        base = "" if os.path.isabs(source) else f" (relative to {os.getcwd()})"
        hint = "; it is a folder, use a glob such as 'folder/*.parquet'" if paths else ""
        raise DataNotFound(f"data source {source!r} matches no file{base}{hint}")
    return files


def read_columns(source: str, format: Format = "auto") -> tuple[str, list[str]]:
    """(path, column names) of the first file matching `source`, in path order, without reading
    its rows: the Parquet footer's schema (pandas index columns left out, as `read_table` leaves
    them) or the CSV header line. DataNotFound when nothing matches, DataError when the file
    cannot be read."""
    path = match_files(source)[0]
    if file_kind(path, format) == "csv":
        return path, header(path)
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (ValueError, OSError, pa.ArrowException) as exc:
        raise DataError(f"{path}: cannot read as parquet: {exc}") from None
    index = {c for c in (schema.pandas_metadata or {}).get("index_columns", [])
             if isinstance(c, str)}
    return path, [name for name in schema.names if name not in index]


def file_kind(path: str, format: Format) -> FileFormat:
    if format != "auto":
        return format
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in _EXTENSIONS:
        raise DataError(
            f"{path}: unknown file extension {suffix!r}; expected .parquet, .pq or .csv, "
            "or set format to 'parquet' or 'csv'"
        )
    return _EXTENSIONS[suffix]
