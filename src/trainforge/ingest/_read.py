"""Reading a file or glob of parquet / csv files into one DataFrame.

Rules:
- `source` is a path or glob (absolute, or relative to the working directory); `**` recurses.
- Matching files are sorted by path, read with the pyarrow engine and concatenated in that order
  under a fresh RangeIndex. Every file must have the same set of columns (order may differ).
- `format="auto"` picks the parser by extension: .parquet / .pq or .csv.
- A CSV row with more or fewer values than the header is named by its line and data row.
"""

from __future__ import annotations

import hashlib

import pandas as pd
import pyarrow as pa

from trainforge.errors import DataError
from trainforge.ingest._csv import ragged_record
from trainforge.ingest._result import IngestResult, SourceFile
from trainforge.ingest._sources import FileFormat, Format, file_kind, match_files

_CHUNK = 1 << 20


def read_table(source: str, format: Format = "auto") -> IngestResult:
    """Read every file matching `source` into one frame, remembering where each row came from.

    >>> result = read_table("data/transactions-*.parquet")  # doctest: +SKIP
    >>> result.locate(0), result.fingerprint[:12]  # doctest: +SKIP
    ('transactions-01.parquet row 1', '3f1c0a9e2b7d')
    """
    paths = match_files(source)
    kinds = [file_kind(path, format) for path in paths]
    frames = [_parse(path, kind) for path, kind in zip(paths, kinds, strict=True)]
    _check_columns(paths, frames)
    files = tuple(
        SourceFile(path, *_hash(path), len(frame), kind)
        for path, frame, kind in zip(paths, frames, kinds, strict=True)
    )
    if sum(f.rows for f in files) == 0:
        raise DataError(f"{source}: contains no rows ({len(files)} file(s) read)")
    frame = pd.concat([f[frames[0].columns] for f in frames if len(f)], ignore_index=True)
    return IngestResult(frame=frame, files=files, source=source)


def _parse(path: str, kind: FileFormat) -> pd.DataFrame:
    reader = pd.read_parquet if kind == "parquet" else pd.read_csv
    try:
        return reader(path, engine="pyarrow")
    except (ValueError, OSError, pa.ArrowException) as exc:
        ragged = ragged_record(path) if kind == "csv" else None
        if ragged is None:
            raise DataError(f"{path}: cannot read as {kind}: {exc}") from None
        line, row, expected, found = ragged
        raise DataError(
            f"{path} line {line} (row {row}): cannot read as csv: expected {expected} values "
            f"as in the header, found {found}"
        ) from None





def _check_columns(paths: list[str], frames: list[pd.DataFrame]) -> None:
    expected = set(frames[0].columns)
    for path, frame in zip(paths[1:], frames[1:], strict=True):
        found = set(frame.columns)
        if found != expected:
            missing = ", ".join(sorted(map(str, expected - found))) or "none"
            extra = ", ".join(sorted(map(str, found - expected))) or "none"
            raise DataError(
                f"{path}: columns differ from {paths[0]}: missing {missing}; extra {extra}"
            )


def _hash(path: str) -> tuple[int, str]:
    """(size, sha256) of the file's bytes, read in 1 MiB chunks."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()
