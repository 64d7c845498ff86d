"""Where the records of a CSV or JSON Lines file lie, in the lines an editor shows.

Rules:
- Lines are numbered from 1; `\\n`, `\\r\\n` and a lone `\\r` each end one, as editors count them.
- A record starts on the line after the previous record ended; a quoted value may span lines.
- Empty lines between records are skipped, as the pyarrow parser skips them; the first record
  is the header, the others are the data rows.
- Records are split by the csv module (a quote opens a value only at its start, `""` inside
  one is a quote), which splits them as pyarrow's parser does. A value over the csv module's
  size limit (131,072 characters) stops the scan: the line numbers are then unknown (None).
- The file comes from `open_text()`, a text stream with newlines kept (`newline=""`): UTF-8,
  a byte order mark skipped, undecodable bytes replaced so they cannot move a line.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TextIO

from trainforge.errors import DataError

if TYPE_CHECKING:
    import numpy as np

OpenText = Callable[[], TextIO]


def header(open_text: OpenText, path: str) -> list[str]:
    """The column names of a CSV file (`path` names it in errors): its first record.
    DataError when it has none."""
    try:
        first = next(_records(open_text), None)
    except csv.Error as exc:
        raise DataError(f"{path}: cannot read the header line: {exc}") from None
    if first is None:
        raise DataError(f"{path}: cannot read as csv: the file has no header line")
    return first[1]


def record_lines(open_text: OpenText, rows: int | None = None) -> np.ndarray | None:
    """The line each data row starts on, or None when a scan of the file does not find exactly
    `rows` of them (the file changed since it was read) or stops (a value is too long)."""
    import numpy as np

    try:
        starts = np.fromiter((line for line, _ in _records(open_text)), dtype=np.int64)
    except csv.Error:
        return None
    if len(starts) == 0 or (rows is not None and len(starts) != rows + 1):
        return None
    return starts[1:]


def jsonl_lines(open_text: OpenText, rows: int | None = None) -> np.ndarray | None:
    """The line of each non-blank line of a JSON Lines file (its rows), or None when there
    are not exactly `rows` of them."""
    import numpy as np

    with open_text() as handle:
        lines = np.fromiter((number for number, text in enumerate(handle, start=1)
                             if text.strip()), dtype=np.int64)
    return None if rows is not None and len(lines) != rows else lines


def ragged_record(open_text: OpenText) -> tuple[int, int, int, int] | None:
    """(line, data row, values expected, values found) of the first data row whose number of
    values differs from the header's, or None when every row has as many (or the scan stops)."""
    try:
        records = _records(open_text)
        _, names = next(records, (0, []))
        for row, (line, fields) in enumerate(records, start=1):
            if len(fields) != len(names):
                return line, row, len(names), len(fields)
    except csv.Error:
        return None
    return None


def _records(open_text: OpenText) -> Iterator[tuple[int, list[str]]]:
    """(first line, values) of each non-empty record, header first."""
    with open_text() as handle:
        reader = csv.reader(handle)
        ended = 0
        for fields in reader:
            start, ended = ended + 1, reader.line_num
            if fields:
                yield start, fields
