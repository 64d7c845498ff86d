"""Artifacts in a local folder: `<root>/<run_id>/<name>`."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from trainforge.errors import ArtifactError
from trainforge.storage.artifacts._base import ArtifactStore


class LocalArtifactStore(ArtifactStore):
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self.root_uri = self.root.as_uri()

    def _put_file(self, key: str, local_path: Path) -> str:
        target = self.root / key
        with open(local_path, "rb") as src:
            self._write_atomic(target, lambda dst: shutil.copyfileobj(src, dst, 1 << 20))
        return target.as_uri()

    def _put_bytes(self, key: str, data: bytes) -> str:
        target = self.root / key
        self._write_atomic(target, lambda dst: dst.write(data))
        return target.as_uri()

    def _get_bytes(self, key: str) -> bytes:
        path = self.root / key
        if not path.is_file():
            raise ArtifactError(f"artifact {key!r} not found under {self.root}")
        return path.read_bytes()

    def _list(self, prefix: str) -> list[str]:
        base = self.root / prefix
        if not base.is_dir():
            return []
        return [p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file()]

    def _uri(self, key: str) -> str:
        return (self.root / key).as_uri()

    @staticmethod
    def _write_atomic(target: Path, write) -> None:
        """Write to a temporary file beside `target`, fsync, then rename over it."""
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as dst:
                write(dst)
                dst.flush()
                os.fsync(dst.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
