"""Objects as files in a local folder: `<root>/<key>`.

A write goes to a temporary file beside the target (`.<name>.<random>.tmp`), created with mode
0o666 so the process umask decides who may read it, as for any file the user creates; it is
fsync'd, renamed over the target, and the folder is fsync'd so the rename survives a crash.
Folders a write creates are fsync'd into their parents. A `batch()` writes every temporary
file, flushes the file system once (`os.sync`), renames them all, and flushes once more: two
flushes for any number of objects (many small files: a data snapshot), and still no object
visible before its bytes are on disk.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from trainforge.storage.objects._base import Chunk, GuardedObjectStore

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL


class LocalObjectStore(GuardedObjectStore):
    """A local folder (created on the first write)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self.root_uri = self.root.as_uri()

    def _path(self, key: str) -> Path:
        return self.root / key if key else self.root

    def _list(self, prefix: str) -> dict[str, int]:
        sizes: dict[str, int] = {}
        pending = [(self._path(prefix), prefix)]
        while pending:
            folder, folder_key = pending.pop()
            try:
                entries = list(os.scandir(folder))
            except (FileNotFoundError, NotADirectoryError):  # no such prefix, or deleted meanwhile
                continue
            for entry in entries:
                key = f"{folder_key}/{entry.name}" if folder_key else entry.name
                with contextlib.suppress(FileNotFoundError):  # deleted while we looked
                    if entry.is_dir(follow_symlinks=False):
                        pending.append((Path(entry.path), key))
                    elif entry.is_file():
                        sizes[key] = entry.stat().st_size
        return sizes

    def _write(self, key: str, chunks: Iterator[Chunk]) -> None:
        tmp, target = self._temporary(key, chunks, fsync=True)
        try:
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(target.parent)

    def _stage(self, key: str, chunks: Iterator[Chunk]) -> tuple[Path, Path]:
        return self._temporary(key, chunks, fsync=False)  # `_commit` flushes them all at once

    def _temporary(self, key: str, chunks: Iterator[Chunk], *,
                   fsync: bool) -> tuple[Path, Path]:
        """(the temporary file holding `chunks`, the object's path); nothing left on error."""
        target = self._path(key)
        tmp = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        # Not mkstemp: its 0600 would keep teammates from reading models and checkpoints.
        try:
            fd = os.open(tmp, _CREATE, 0o666)
        except FileNotFoundError:  # its folder is new (asked only then: one stat less a write)
            _make_dirs(target.parent)
            fd = os.open(tmp, _CREATE, 0o666)
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in chunks:
                    out.write(chunk)
                if fsync:
                    out.flush()
                    os.fsync(out.fileno())
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return tmp, target

    def _commit(self, staged: Sequence[tuple[Path, Path]]) -> None:
        os.sync()
        for tmp, target in staged:
            os.replace(tmp, target)
        os.sync()

    def _discard(self, staged: Sequence[tuple[Path, Path]]) -> None:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)

    def _open(self, key: str) -> BinaryIO:
        return open(self._path(key), "rb")

    def _read(self, key: str) -> bytes:
        return self._path(key).read_bytes()

    def _size(self, key: str) -> int:
        info = os.stat(self._path(key))
        if not stat.S_ISREG(info.st_mode):
            raise IsADirectoryError(f"{self._path(key)} is a folder, not an object")
        return info.st_size

    def _delete(self, key: str) -> None:
        target = self._path(key)
        try:
            target.unlink()
        except (FileNotFoundError, NotADirectoryError):
            return
        _fsync_dir(target.parent)

    def _delete_prefix(self, prefix: str) -> None:
        folder = self._path(prefix)
        try:
            shutil.rmtree(folder)
        except (FileNotFoundError, NotADirectoryError):
            return
        _fsync_dir(folder.parent)

    def _uri(self, key: str) -> str:
        return self._path(key).as_uri()

    def _local_path(self, key: str) -> Path:
        return self._path(key)


def _make_dirs(folder: Path) -> None:
    """Create `folder` and its missing parents, each made durable in its parent."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for new in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another writer
            new.mkdir()
        _fsync_dir(new.parent)


def _fsync_dir(folder: Path) -> None:
    """Make renames and new entries in `folder` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
