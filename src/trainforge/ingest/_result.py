"""What `read_table` hands back: the rows, and exactly which file bytes they came from."""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import TYPE_CHECKING

from trainforge.entities import DataVersion
from trainforge.ingest._sources import Compression, FileFormat

if TYPE_CHECKING:  # `content_id` and `data_version_of` serve commands that load no table
    import numpy as np
    import pandas as pd


def content_id(files: Iterable[tuple[str, str]]) -> str:
    """The content-addressed id of a set of (name, sha256) files: sha256 over the sorted
    `name NUL sha256 LF` lines. A data version's id, and its manifest's."""
    return hashlib.sha256("".join(f"{name}\0{sha}\n" for name, sha in sorted(files))
                          .encode()).hexdigest()


@dataclass(frozen=True)
class SourceFile:
    """One file read: its absolute path or URL, its name below the source's fixed folder
    (`SourceFileInfo.name`), size in bytes, sha256 of its bytes as stored, its row count, the
    format it was parsed as and its compression."""

    path: str
    name: str
    size: int
    sha256: str
    rows: int
    format: FileFormat
    compression: Compression | None = None


@dataclass(frozen=True, eq=False)
class IngestResult:
    """The concatenated rows of `files` (in path order) and the source pattern that found them.

    Row `i` of `frame` comes from the file whose cumulative row range holds `i`; `locate` says
    which, and where in it. File names are relative to the source's fixed folder, so the
    fingerprint names content, not location: the same bytes under another folder give the same
    fingerprint.
    """

    frame: pd.DataFrame
    files: tuple[SourceFile, ...]
    source: str
    lines: Callable[[int], np.ndarray | None] = field(
        default=lambda index: None, repr=False, compare=False
    )
    positions: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def fingerprint(self) -> str:
        """`content_id` of the files' (name, sha256) pairs."""
        return content_id((f.name, f.sha256) for f in self.files)

    def locate(self, row: int) -> str:
        """Where row position `row` of `frame` lies, as a user opening the file finds it.

        CSV and JSON Lines: `"<file> line <L> (row <n>)"`, L the line an editor shows (the
        header is line 1 of a plain CSV file) and n the data row in that file, both from 1.
        Parquet has no lines: `"<file> row <n>"`. When a text file no longer scans to the rows
        read (it changed since, or holds a value too long to scan), its line is left out as for
        Parquet. The first location asked of a text file scans it once (`lines`, from
        `read_table`); the line numbers are kept.
        """
        if not 0 <= row < len(self.frame):
            raise IndexError(f"row {row} is outside the {len(self.frame)} rows read")
        if self.positions is not None:
            row = int(self.positions[row])
        ends = list(accumulate(f.rows for f in self.files))
        index = bisect.bisect_right(ends, row)
        within = row - (ends[index - 1] if index else 0)
        name = self.files[index].name
        lines = self.lines(index)
        if lines is None:
            return f"{name} row {within + 1}"
        return f"{name} line {lines[within]} (row {within + 1})"

    def without_rows(self, dropped: np.ndarray) -> IngestResult:
        """The same files read, without the rows `dropped` masks (quarantined ones): a fresh
        index, and `locate` still naming each kept row's place in its file. The data version
        is unchanged: it names the files read."""
        import numpy as np

        kept = np.flatnonzero(~dropped)
        positions = kept if self.positions is None else self.positions[kept]
        frame = self.frame.iloc[kept].reset_index(drop=True)
        return IngestResult(frame, self.files, self.source, self.lines, positions)

    def data_version(self) -> DataVersion:
        """The content-addressed data version of exactly these files."""
        return data_version_of(self.files, self.source)


def data_version_of(files: Sequence[SourceFile], source: str) -> DataVersion:
    """The content-addressed data version of exactly `files`, read from `source`."""
    return DataVersion(
        data_version_id=content_id((f.name, f.sha256) for f in files),
        source=source,
        files=tuple({"name": f.name, "size": f.size, "sha256": f.sha256, "rows": f.rows}
                    for f in files),
        num_rows=sum(f.rows for f in files),
    )
