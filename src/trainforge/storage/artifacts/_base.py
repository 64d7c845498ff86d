"""The artifact store contract: files a run produces, kept under the run's id.

Rules:
- an artifact is named by a relative POSIX path (`model/weights.safetensors`); absolute paths,
  `..` segments and empty names are refused with `ArtifactError` before anything is written;
- a write is atomic: readers see the old file or the whole new one, never a part;
- implementations are chosen by URI scheme (`open_artifact_store`) and are safe to share across
  threads.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path, PurePosixPath

from trainforge.errors import ArtifactError


class ArtifactStore(ABC):
    """Guards in the public methods, storage in the `_` hooks."""

    root_uri: str

    def put_file(self, run_id: str, local_path: str | Path, name: str | None = None) -> str:
        """Copy a local file in as `name` (default: its file name); return the artifact's URI."""
        local_path = Path(local_path)
        if not local_path.is_file():
            raise ArtifactError(f"{local_path}: not a file")
        key = self._key(run_id, name or local_path.name)
        return self._put_file(key, local_path)

    def put_bytes(self, run_id: str, name: str, data: bytes) -> str:
        """Store `data` as `name`; return the artifact's URI."""
        return self._put_bytes(self._key(run_id, name), data)

    def get_bytes(self, run_id: str, name: str) -> bytes:
        """Read an artifact back; `ArtifactError` when it does not exist."""
        return self._get_bytes(self._key(run_id, name))

    def list_names(self, run_id: str) -> list[str]:
        """Names of the run's artifacts, sorted."""
        return sorted(self._list(self._key(run_id, "")))

    def run_uri(self, run_id: str) -> str:
        """Where the run's artifacts live (recorded on the run)."""
        return self._uri(self._key(run_id, ""))

    def _key(self, run_id: str, name: str) -> str:
        _check_segment(run_id, "run id")
        if not name:
            return run_id
        path = PurePosixPath(name)
        if path.is_absolute() or ".." in path.parts or "\\" in name:
            raise ArtifactError(f"artifact name {name!r}: expected a relative path without '..'")
        return f"{run_id}/{path.as_posix()}"

    @abstractmethod
    def _put_file(self, key: str, local_path: Path) -> str: ...

    @abstractmethod
    def _put_bytes(self, key: str, data: bytes) -> str: ...

    @abstractmethod
    def _get_bytes(self, key: str) -> bytes: ...

    @abstractmethod
    def _list(self, prefix: str) -> list[str]: ...

    @abstractmethod
    def _uri(self, key: str) -> str: ...


def _check_segment(value: str, what: str) -> None:
    if not value or "/" in value or "\\" in value or value in (".", ".."):
        raise ArtifactError(f"{what} {value!r}: expected a single path segment")
