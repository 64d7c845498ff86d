"""What `read_table` hands back: the rows, and exactly which file bytes they came from."""

from __future__ import annotations

import bisect
import hashlib
import os
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

import pandas as pd

from trainforge.entities import DataVersion


@dataclass(frozen=True)
class SourceFile:
    """One file read: its absolute path, size in bytes, sha256 of its bytes and its row count."""

    path: str
    size: int
    sha256: str
    rows: int


@dataclass(frozen=True, eq=False)
class IngestResult:
    """The concatenated rows of `files` (in path order) and the source pattern that found them.

    Row `i` of `frame` comes from the file whose cumulative row range holds `i`; `locate` says
    which. File names are relative to the files' common parent folder, so the fingerprint names
    content, not location: the same bytes under another folder give the same fingerprint.
    """

    frame: pd.DataFrame
    files: tuple[SourceFile, ...]
    source: str

    @property
    def fingerprint(self) -> str:
        """sha256 over the sorted (relative file name, file sha256) pairs."""
        digest = hashlib.sha256()
        pairs = zip(self._names(), (f.sha256 for f in self.files), strict=True)
        for name, sha in sorted(pairs):
            digest.update(f"{name}\0{sha}\n".encode())
        return digest.hexdigest()

    def locate(self, row: int) -> str:
        """`"<file name> row <n>"` for row position `row` of `frame` (n is 0-based in that file)."""
        if not 0 <= row < len(self.frame):
            raise IndexError(f"row {row} is outside the {len(self.frame)} rows read")
        ends = list(accumulate(f.rows for f in self.files))
        index = bisect.bisect_right(ends, row)
        start = ends[index - 1] if index else 0
        return f"{self._names()[index]} row {row - start}"

    def data_version(self) -> DataVersion:
        """The content-addressed data version of exactly these files."""
        files = tuple(
            {"name": name, "size": f.size, "sha256": f.sha256, "rows": f.rows}
            for name, f in zip(self._names(), self.files, strict=True)
        )
        return DataVersion(
            data_version_id=self.fingerprint,
            source=self.source,
            files=files,
            num_rows=len(self.frame),
        )

    def _names(self) -> list[str]:
        parent = os.path.commonpath([os.path.dirname(f.path) for f in self.files])
        return [Path(f.path).relative_to(parent).as_posix() for f in self.files]
