"""Content hashes of data files, each unchanged local file hashed once.

Rules:
- A file's hash is the sha256 of its bytes as stored (compressed or not), read in 1 MiB chunks.
- `HashCache` is a SQLite file (`<home>/cache/file-hashes.sqlite`) mapping a local file's
  (path, size, mtime in ns, inode, ctime in ns) to its hash and row count: a file whose stat
  is unchanged is not read again; any change of those five (a rewrite, a copy over it, a touch)
  hashes it again. Files behind a URL are hashed every time (their listing says nothing a
  rewrite must change).
- It is a cache: a cache that cannot be opened or written (read-only home, a lock held by
  another process past its timeout) is skipped with a log line, never an error. Any number of
  processes may share it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("trainforge")

_CHUNK = 1 << 20
StatKey = tuple[int, int, int, int]
_SCHEMA = """CREATE TABLE IF NOT EXISTS file_hashes (
    path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, inode INTEGER, ctime_ns INTEGER,
    sha256 TEXT NOT NULL, rows INTEGER)"""


class HashCache:
    """(sha256, rows) of local files by their stat; see the module rules."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._preloaded: dict[str, tuple[StatKey,
                                         tuple[str, int | None]]] | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=5, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # a cache: a lost entry costs a hash
            self._db.execute(_SCHEMA)
        except sqlite3.Error as exc:
            log.warning("file hash cache %s not used: %s", path, exc)
            self._db = None

    def lookup(self, path: str, stat: StatKey | None = None) -> tuple[str, int | None] | None:
        """(sha256, rows or None) of the local file at `path` if its stat (`stat`, when the
        caller has just taken it, else read now) is unchanged."""
        if self._db is None:
            return None
        key = stat_key(path) if stat is None else stat
        if self._preloaded is not None:
            hit = self._preloaded.get(path)
            return hit[1] if hit is not None and hit[0] == key else None
        try:
            row = self._db.execute(
                "SELECT sha256, rows FROM file_hashes WHERE path = ? AND size = ? AND "
                "mtime_ns = ? AND inode = ? AND ctime_ns = ?", (path, *key)).fetchone()
        except sqlite3.Error:
            return None
        return None if row is None else (row[0], row[1])

    def preload(self, prefix: str) -> None:
        """Read the entries of every path under `prefix` in one query, for a lookup of many
        files (a snapshot of a folder); later lookups of other paths miss."""
        if self._db is None:
            return
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        try:
            rows = self._db.execute(
                "SELECT path, size, mtime_ns, inode, ctime_ns, sha256, rows FROM file_hashes "
                "WHERE path LIKE ? ESCAPE '\\'", (f"{escaped}%",)).fetchall()
        except sqlite3.Error:
            return
        self._preloaded = {row[0]: ((row[1], row[2], row[3], row[4]), (row[5], row[6]))
                           for row in rows}

    def store(self, path: str, stat: StatKey, sha256: str,
              rows: int | None) -> None:
        """Remember the hash (and rows) of `path` as it was when `stat_key(path)` gave `stat`."""
        self.store_many([(path, stat, sha256, rows)])

    def store_many(self, entries: Sequence[tuple[str, StatKey, str,
                                                  int | None]]) -> None:
        """`store` each (path, stat, sha256, rows), in one transaction."""
        if self._db is None or not entries:
            return
        if self._preloaded is not None:
            for path, stat, sha256, rows in entries:
                self._preloaded[path] = (stat, (sha256, rows))
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany(
                    "INSERT OR REPLACE INTO file_hashes VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(path, *stat, sha256, rows) for path, stat, sha256, rows in entries])
        except sqlite3.Error as exc:
            log.warning("file hash cache %s not updated: %s", self.path, exc)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def stat_key(path: str) -> StatKey:
    """(size, mtime ns, inode, ctime ns) of a local file: what a change of its bytes changes."""
    return stat_fields(os.stat(path))


def stat_fields(stat: os.stat_result) -> StatKey:
    """`stat_key`'s fields of a stat already taken (a listing's)."""
    return stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns


def file_sha256(fs: Any, path: str, cache: HashCache | None = None) -> tuple[int, str]:
    """(size, sha256) of the file at `path` on `fs`, from `cache` when its stat is unchanged."""
    if cache is None or "://" in path:
        return _digest(fs, path)
    before = stat_key(path)
    hit = cache.lookup(path)
    if hit is not None:
        return before[0], hit[0]
    size, sha256 = _digest(fs, path)
    if stat_key(path) == before:  # not rewritten while it was read
        cache.store(path, before, sha256, None)
    return size, sha256


def _digest(fs: Any, path: str) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    with fs.open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()
