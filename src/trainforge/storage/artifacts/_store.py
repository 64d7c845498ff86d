"""The artifact store: files a run produces, kept as `<root>/<run_id>/<name>` in an object store.

Rules:
- an artifact is named by a relative POSIX path (`model/weights.safetensors`) whose segments are
  not empty and do not start with '.'; absolute paths, `..`, backslashes and empty names are
  refused with `ArtifactError` before anything is written; a run id is one such segment;
- a write is atomic and durable: readers see the old file or the whole new one, never a part,
  and a failed write leaves no file of that name;
- every failure of the object store is raised as `ArtifactError` naming the artifact's URI;
- the store holds no per-call state and is safe to share across threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from trainforge.errors import ArtifactError, ObjectStoreError
from trainforge.storage.objects import ObjectStore, check_key


class ArtifactStore:
    """The artifacts of every run under one object store root (`open_artifact_store`)."""

    def __init__(self, objects: ObjectStore) -> None:
        self.objects = objects
        self.root_uri = objects.root_uri

    def put_file(self, run_id: str, local_path: str | Path, name: str | None = None) -> str:
        """Copy a local file in as `name` (default: its file name); return the artifact's URI."""
        local_path = Path(local_path)
        if not local_path.is_file():
            raise ArtifactError(f"{local_path}: not a file")
        key = self._key(run_id, name or local_path.name)
        with _artifact_errors(), open(local_path, "rb") as source:
            self.objects.write(key, source)
        return self.objects.uri_of(key)

    def put_bytes(self, run_id: str, name: str, data: bytes) -> str:
        """Store `data` as `name`; return the artifact's URI."""
        key = self._key(run_id, name)
        with _artifact_errors():
            self.objects.write(key, data)
        return self.objects.uri_of(key)

    def put_stream(self, run_id: str, name: str, source: BinaryIO) -> str:
        """Store what `source` reads, to its end, as `name`; return the artifact's URI."""
        key = self._key(run_id, name)
        with _artifact_errors():
            self.objects.write(key, source)
        return self.objects.uri_of(key)

    def get_bytes(self, run_id: str, name: str) -> bytes:
        """Read an artifact back; `ArtifactError` when it does not exist."""
        key = self._key(run_id, name)
        with _artifact_errors():
            return self.objects.read(key)

    def open(self, run_id: str, name: str) -> BinaryIO:
        """A binary file object streaming the artifact; close it after use."""
        key = self._key(run_id, name)
        with _artifact_errors():
            return self.objects.open(key)

    def list_names(self, run_id: str) -> list[str]:
        """Names of the run's artifacts, sorted."""
        prefix = self._key(run_id, "")
        with _artifact_errors():
            return [key.removeprefix(f"{prefix}/") for key in self.objects.list(prefix)]

    def run_uri(self, run_id: str) -> str:
        """Where the run's artifacts live (recorded on the run)."""
        return self.objects.uri_of(self._key(run_id, ""))

    def _key(self, run_id: str, name: str) -> str:
        if not run_id or "/" in run_id or "\\" in run_id or run_id.startswith("."):
            raise ArtifactError(f"run id {run_id!r}: expected a single path segment")
        if not name:
            return run_id
        try:
            check_key(name)
        except ObjectStoreError as exc:
            raise ArtifactError(f"artifact name {name!r}: {exc.problem}") from None
        return f"{run_id}/{name}"


@contextmanager
def _artifact_errors() -> Iterator[None]:
    try:
        yield
    except ObjectStoreError as exc:
        raise ArtifactError(f"artifact {exc}") from exc
