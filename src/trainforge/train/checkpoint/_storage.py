"""Where checkpoint files live: a key layout over one object store rooted at the location.

Rules:
- paths are relative POSIX paths under the location, `<checkpoint dir>/<file name>`;
- `write` is atomic and durable: when it returns, the whole file is visible under its name and
  survives a crash; if it fails or the process dies, no file of that name appears (a local
  folder may keep a temporary file named with a leading "." which `list_files` shows, so an
  unfinished folder is found and removed);
- `read_tensors` hands the file's bytes to `check` before anything is deserialized; in a local
  folder the check reads a memory map and tensors are read with `pread`, elsewhere the bytes are
  downloaded once;
- deleting what is already gone is not an error, so every deletion can be retried;
- failures of the object store are raised as `CheckpointError` naming the file; an error raised
  by the chunks given to `write` propagates as it is;
- the files of a sharded checkpoint are written by `torch.distributed.checkpoint` itself
  (`dcp_writer`, `dcp_reader`: a local folder or the same fsspec URL and options); their names
  (`.metadata`) are no object keys, so they are read and copied through fsspec
  (`read_shard_file`, `write_shard_file`);
- one writer per location; any number of readers. The storage holds no per-call state and is
  safe to share across threads.

`open_storage(location)` accepts what `open_object_store` does: a path or `file://` URI is a
local folder, `s3://bucket/prefix` (or another fsspec URL) goes through fsspec with
`storage_options` (credentials, endpoint). URIs of local checkpoints are plain absolute paths.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safetensors import SafetensorError

from trainforge.errors import CheckpointError, ObjectStoreError
from trainforge.storage.objects import ObjectStore, open_object_store

# torch is imported where tensors are read: listing and verifying checkpoints import none
# (and DCP, 0.6 s more of torch's tensor stack, only for sharded checkpoints)
if TYPE_CHECKING:
    import torch
    from torch.distributed.checkpoint import StorageReader, StorageWriter

Check = Callable[[memoryview | bytes], None]


class Storage:
    """Checkpoint files under one location."""

    def __init__(self, objects: ObjectStore, storage_options: Mapping[str, Any] | None = None,
                 ) -> None:
        self.objects = objects
        self.storage_options = dict(storage_options or {})
        local = objects.local_path()
        self.uri = str(local) if local is not None else objects.root_uri

    def list_files(self) -> dict[str, int]:
        """Size of every file exactly one folder down (`dir/name`), temporary files included."""
        with self._errors(""):
            found = self.objects.list(include_temporary=True)
        return {path: size for path, size in found.items() if path.count("/") == 1}

    def files_in(self, name: str) -> list[str]:
        """The names of the files in folder `name`, temporary files included."""
        with self._errors(name):
            found = self.objects.list(name, include_temporary=True)
        return [path.split("/", 1)[1] for path in found
                if path.count("/") == 1 and path.split("/", 1)[0] == name]

    def dcp_writer(self, name: str) -> StorageWriter:
        """A `torch.distributed.checkpoint` writer into folder `name` (files are synced)."""
        from torch.distributed.checkpoint import FileSystemWriter
        from torch.distributed.checkpoint._fsspec_filesystem import FsspecWriter

        local = self.objects.local_path(name)
        if local is not None:
            return FileSystemWriter(local, sync_files=True)
        return FsspecWriter(self.objects.uri_of(name), sync_files=True, **self.storage_options)

    def dcp_reader(self, name: str) -> StorageReader:
        """A `torch.distributed.checkpoint` reader of folder `name`."""
        from torch.distributed.checkpoint import FileSystemReader
        from torch.distributed.checkpoint._fsspec_filesystem import FsspecReader

        local = self.objects.local_path(name)
        if local is not None:
            return FileSystemReader(local)
        return FsspecReader(self.objects.uri_of(name), **self.storage_options)

    def read_shard_file(self, path: str) -> bytes:
        """A file `torch.distributed.checkpoint` wrote (its names, such as `.metadata`, are no
        object keys), read through fsspec; `CheckpointError` when it cannot be read."""
        fs, where = self._shard_file(path)
        try:
            return bytes(fs.cat_file(where))
        except OSError as exc:
            raise CheckpointError(f"{self.uri_of(path)}: cannot read: {exc}") from exc

    def write_shard_file(self, path: str, data: bytes) -> None:
        """Store a file as `torch.distributed.checkpoint` would (the manifest commits it)."""
        fs, where = self._shard_file(path)
        try:
            fs.makedirs(where.rsplit("/", 1)[0], exist_ok=True)
            fs.pipe_file(where, data)
        except OSError as exc:
            raise CheckpointError(f"{self.uri_of(path)}: cannot write: {exc}") from exc

    def _shard_file(self, path: str) -> tuple[Any, str]:
        import fsspec

        folder, file_name = path.rsplit("/", 1)
        local = self.objects.local_path(folder)
        if local is not None:
            return fsspec.filesystem("file"), str(local / file_name)
        fs, where = fsspec.core.url_to_fs(f"{self.objects.uri_of(folder)}/{file_name}",
                                          **self.storage_options)
        return fs, where

    def write(self, path: str, chunks: Iterable[memoryview | bytes]) -> None:
        """Store the concatenated chunks under `path`, atomically and durably."""
        with self._errors(path):
            self.objects.write(path, chunks)

    def read(self, path: str) -> bytes:
        """The whole file; `CheckpointError` when it cannot be read."""
        with self._errors(path):
            return self.objects.read(path)

    def read_tensors(self, path: str, check: Check) -> dict[str, torch.Tensor]:
        """Call `check(file bytes)`, then deserialize the safetensors file."""
        from safetensors.torch import load, load_file

        with self._errors(path):
            local = self.objects.local_path(path)
        if local is None:
            data = self.read(path)
            check(data)
            return _tensors(lambda: load(data), self.uri_of(path))
        try:
            with open(local, "rb") as file:
                if os.fstat(file.fileno()).st_size == 0:
                    check(b"")
                else:
                    with (
                        mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped,
                        memoryview(mapped) as view,
                    ):
                        check(view)
        except OSError as exc:
            raise CheckpointError(f"{local}: cannot read: {exc}") from exc
        # Read into fresh memory: tensors mapped copy-on-write load faster but make the first
        # optimizer step after resuming several times slower (page faults).
        return _tensors(lambda: load_file(local, backend="pread"), str(local))

    def delete(self, path: str) -> None:
        """Remove one file (absent is fine)."""
        with self._errors(path):
            self.objects.delete(path)

    def delete_dir(self, name: str) -> None:
        """Remove a checkpoint folder and whatever is left in it (absent is fine)."""
        with self._errors(name):
            self.objects.delete_prefix(name)

    def uri_of(self, path: str) -> str:
        """The plain path of a local file or folder, the URI of one elsewhere."""
        folder, _, file_name = path.rpartition("/")
        if file_name.startswith("."):  # a temporary or DCP file: a name but no object key
            return f"{self.uri_of(folder) if folder else self.uri}/{file_name}"
        local = self.objects.local_path(path)
        return str(local) if local is not None else self.objects.uri_of(path)

    @contextmanager
    def _errors(self, path: str) -> Iterator[None]:
        try:
            yield
        except ObjectStoreError as exc:
            raise CheckpointError(f"{self.uri_of(path)}: {exc.problem}") from exc


def open_storage(
    location: str | Path, storage_options: Mapping[str, Any] | None = None
) -> Storage:
    """The storage for `location`: a local folder, `file://...` or `s3://bucket/prefix`."""
    try:
        return Storage(open_object_store(location, storage_options), storage_options)
    except ObjectStoreError as exc:
        raise CheckpointError(f"checkpoint location {str(location)!r}: {exc.problem}") from exc


def _tensors(
    load_tensors: Callable[[], dict[str, torch.Tensor]], where: str
) -> dict[str, torch.Tensor]:
    try:
        return load_tensors()
    except (SafetensorError, ValueError) as exc:
        raise CheckpointError(f"{where}: not a readable safetensors file: {exc}") from exc
    except OSError as exc:
        raise CheckpointError(f"{where}: cannot read: {exc}") from exc
