"""Where checkpoint files live: one small contract, a local and an object-store implementation.

Rules every implementation keeps:
- paths are relative POSIX paths under the location, `<checkpoint dir>/<file name>`;
- `write` is atomic and durable: when it returns, the whole file is visible under its name and
  survives a crash; if it fails or the process dies, no file of that name appears (a temporary
  file may be left behind, named with a leading "." so listings can tell it apart);
- `read_tensors` hands the file's bytes to `check` before anything is deserialized;
- deleting what is already gone is not an error, so every deletion can be retried;
- one writer per location; any number of readers. Instances hold no per-call state and are
  safe to share across threads.

`open_storage(uri)` picks the implementation: a path or `file://` URI is a local folder,
`s3://bucket/prefix` goes through fsspec/s3fs with `storage_options` (credentials, endpoint).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load, load_file

from trainforge.errors import CheckpointError

Check = Callable[[memoryview | bytes], None]


class Storage(ABC):
    """Files under one checkpoint location."""

    uri: str

    @abstractmethod
    def list_files(self) -> dict[str, int]:
        """Size of every file exactly one folder down (`dir/name`), temporary files included."""

    @abstractmethod
    def write(self, path: str, chunks: Iterable[memoryview | bytes]) -> None:
        """Store the concatenated chunks under `path`, atomically and durably."""

    @abstractmethod
    def read(self, path: str) -> bytes:
        """The whole file; `CheckpointError` when it cannot be read."""

    @abstractmethod
    def read_tensors(self, path: str, check: Check) -> dict[str, torch.Tensor]:
        """Call `check(file bytes)`, then deserialize the safetensors file."""

    @abstractmethod
    def delete(self, path: str) -> None:
        """Remove one file (absent is fine)."""

    @abstractmethod
    def delete_dir(self, name: str) -> None:
        """Remove a checkpoint folder and whatever is left in it (absent is fine)."""

    def uri_of(self, path: str) -> str:
        return f"{self.uri.rstrip('/')}/{path}"


def open_storage(location: str | Path, storage_options: dict[str, Any] | None = None) -> Storage:
    """The storage for `location`: a local folder, `file://...` or `s3://bucket/prefix`."""
    text = str(location)
    if text.startswith("file://"):
        return LocalStorage(text.removeprefix("file://"))
    if text.startswith("s3://"):
        return FsspecStorage(text, storage_options or {})
    if "://" in text:
        raise CheckpointError(
            f"checkpoint location {text!r}: unsupported scheme; expected a path or s3://"
        )
    return LocalStorage(text)


def _tensors_from_bytes(data: bytes, where: str) -> dict[str, torch.Tensor]:
    try:
        return load(data)
    except (SafetensorError, ValueError, OSError) as exc:
        raise CheckpointError(f"{where}: not a readable safetensors file: {exc}") from exc


class LocalStorage(Storage):
    """A local folder. Writes: temporary file beside the target, fsync, rename, fsync folder."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self.uri = str(self.root)

    def uri_of(self, path: str) -> str:
        return str(self.root / path)

    def list_files(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        if not self.root.is_dir():
            return sizes
        for folder in os.scandir(self.root):
            if not folder.is_dir(follow_symlinks=False):
                continue
            with contextlib.suppress(FileNotFoundError):  # a folder being deleted meanwhile
                for entry in os.scandir(folder.path):
                    if entry.is_file(follow_symlinks=False):
                        sizes[f"{folder.name}/{entry.name}"] = entry.stat().st_size
        return sizes

    def write(self, path: str, chunks: Iterable[memoryview | bytes]) -> None:
        target = self.root / path
        self._ensure_dir(target.parent)
        tmp = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        # Not mkstemp: its 0600 would make checkpoints unreadable to the rest of a team.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in chunks:
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(target.parent)

    def read(self, path: str) -> bytes:
        try:
            return (self.root / path).read_bytes()
        except OSError as exc:
            raise CheckpointError(f"{self.root / path}: cannot read: {exc}") from exc

    def read_tensors(self, path: str, check: Check) -> dict[str, torch.Tensor]:
        target = self.root / path
        try:
            with open(target, "rb") as file:
                if os.fstat(file.fileno()).st_size == 0:
                    check(b"")
                else:
                    with (
                        mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped,
                        memoryview(mapped) as view,
                    ):
                        check(view)
            # Read into fresh memory: tensors mapped copy-on-write load faster but make the
            # first optimizer step after resuming several times slower (page faults).
            return load_file(target, backend="pread")
        except (SafetensorError, ValueError) as exc:
            raise CheckpointError(f"{target}: not a readable safetensors file: {exc}") from exc
        except OSError as exc:
            raise CheckpointError(f"{target}: cannot read: {exc}") from exc

    def delete(self, path: str) -> None:
        target = self.root / path
        target.unlink(missing_ok=True)
        if target.parent.is_dir():
            _fsync_dir(target.parent)

    def delete_dir(self, name: str) -> None:
        folder = self.root / name
        if not folder.is_dir():
            return
        for entry in folder.iterdir():
            entry.unlink(missing_ok=True)
        folder.rmdir()
        _fsync_dir(self.root)

    def _ensure_dir(self, folder: Path) -> None:
        if folder.is_dir():
            return
        folder.mkdir(parents=True, exist_ok=True)
        _fsync_dir(folder.parent)


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


class FsspecStorage(Storage):
    """An object store through fsspec (`s3://bucket/prefix` via s3fs).

    An object becomes visible only when its upload completes, so `write` is atomic without a
    temporary name. Listings bypass fsspec's cache, since another process may have written.
    """

    def __init__(self, uri: str, storage_options: dict[str, Any]) -> None:
        import fsspec

        self.uri = uri.rstrip("/")
        protocol, self._base = uri.split("://", 1)
        self._base = self._base.rstrip("/")
        try:
            self.fs = fsspec.filesystem(protocol, **storage_options)
        except ImportError as exc:
            raise CheckpointError(
                f"checkpoint location {uri!r} needs the s3 extra: pip install 'trainforge[s3]'"
            ) from exc

    def list_files(self) -> dict[str, int]:
        self.fs.invalidate_cache(self._base)
        found = self.fs.find(self._base, detail=True)
        prefix = f"{self._base}/"
        sizes = {}
        for key, info in found.items():
            relative = key.removeprefix(prefix)
            if relative.count("/") == 1 and info.get("type") != "directory":
                sizes[relative] = int(info["size"])
        return sizes

    def write(self, path: str, chunks: Iterable[memoryview | bytes]) -> None:
        out = self.fs.open(f"{self._base}/{path}", "wb")
        try:
            for chunk in chunks:
                out.write(chunk)
        except BaseException:
            out.discard()
            out.closed = True  # close() would publish the part written so far
            raise
        out.close()

    def read(self, path: str) -> bytes:
        try:
            return self.fs.cat_file(f"{self._base}/{path}")
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{self.uri_of(path)}: cannot read: {exc}") from exc

    def read_tensors(self, path: str, check: Check) -> dict[str, torch.Tensor]:
        data = self.read(path)
        check(data)
        return _tensors_from_bytes(data, self.uri_of(path))

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(f"{self._base}/{path}")

    def delete_dir(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(f"{self._base}/{name}", recursive=True)
        self.fs.invalidate_cache(self._base)
