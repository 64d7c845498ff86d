"""Where the records of a CSV file lie, in the lines an editor shows.

Rules:
- Lines are numbered from 1; `\\n`, `\\r\\n` and a lone `\\r` each end one, as editors count them.
- A record starts on the line after the previous record ended; a quoted value may span lines.
- Empty lines between records are skipped, as the pyarrow parser skips them; the first record
  is the header, the others are the data rows.
- Records are split by the csv module (a quote opens a value only at its start, `""` inside
  one is a quote), which splits them as pyarrow's parser does. A value over the csv module's
  size limit (131,072 characters) stops the scan: the line numbers are then unknown (None).
- The file is read as UTF-8 (a byte order mark skipped); undecodable bytes cannot move a line.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import TYPE_CHECKING

from trainforge.errors import DataError

if TYPE_CHECKING:
    import numpy as np


def header(path: str) -> list[str]:
    """The column names of a CSV file: its first record. DataError when it has none."""
    try:
        first = next(_records(path), None)
    except csv.Error as exc:
        raise DataError(f"{path}: cannot read the header line: {exc}") from None
    if first is None:
        raise DataError(f"{path}: cannot read as csv: the file has no header line")
    return first[1]


def record_lines(path: str, rows: int) -> np.ndarray | None:
    """The line each of the `rows` data rows starts on, or None when a scan of the file does not
    find exactly `rows` of them (the file changed since it was read, or a value is too long)."""
    import numpy as np

    try:
        starts = np.fromiter((line for line, _ in _records(path)), dtype=np.int64)
    except csv.Error:
        return None
    return starts[1:] if len(starts) == rows + 1 else None


def ragged_record(path: str) -> tuple[int, int, int, int] | None:
    """(line, data row, values expected, values found) of the first data row whose number of
    values differs from the header's, or None when every row has as many (or the scan stops)."""
    try:
        records = _records(path)
        _, names = next(records, (0, []))
        for row, (line, fields) in enumerate(records, start=1):
            if len(fields) != len(names):
                return line, row, len(names), len(fields)
    except csv.Error:
        return None
    return None


def _records(path: str) -> Iterator[tuple[int, list[str]]]:
    """(first line, values) of each non-empty record, header first."""
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
        reader = csv.reader(handle)
        ended = 0
        for fields in reader:
            start, ended = ended + 1, reader.line_num
            if fields:
                yield start, fields
