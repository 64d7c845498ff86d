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
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load, load_file

from trainforge.errors import CheckpointError, ObjectStoreError
from trainforge.storage.objects import ObjectStore, open_object_store

Check = Callable[[memoryview | bytes], None]


class Storage:
    """Checkpoint files under one location."""

    def __init__(self, objects: ObjectStore) -> None:
        self.objects = objects
        local = objects.local_path()
        self.uri = str(local) if local is not None else objects.root_uri

    def list_files(self) -> dict[str, int]:
        """Size of every file exactly one folder down (`dir/name`), temporary files included."""
        with self._errors(""):
            found = self.objects.list(include_temporary=True)
        return {path: size for path, size in found.items() if path.count("/") == 1}

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
        return Storage(open_object_store(location, storage_options))
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
