"""Run artifacts as a key layout over the object store, chosen by the artifact root's URI."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainforge.errors import ArtifactError, ObjectStoreError
from trainforge.storage.artifacts._store import ArtifactStore
from trainforge.storage.objects import open_object_store

__all__ = ["ArtifactStore", "open_artifact_store"]


def open_artifact_store(
    root: str | Path, storage_options: Mapping[str, Any] | None = None
) -> ArtifactStore:
    """The artifacts under `root`: a path, `file:///path` or an fsspec URL such as
    `s3://bucket/prefix` (`storage_options` go to fsspec; for S3 credentials and endpoint
    otherwise come from the environment). `ArtifactError` for an unusable root."""
    try:
        return ArtifactStore(open_object_store(root, storage_options))
    except ObjectStoreError as exc:
        raise ArtifactError(f"artifact root {str(root)!r}: {exc.problem}") from exc
