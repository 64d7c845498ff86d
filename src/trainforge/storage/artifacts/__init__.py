"""Artifact storage behind one contract, implementations chosen by URI scheme."""

from __future__ import annotations

from pathlib import Path

from trainforge.errors import ArtifactError
from trainforge.storage.artifacts._base import ArtifactStore
from trainforge.storage.artifacts._local import LocalArtifactStore

__all__ = ["ArtifactStore", "LocalArtifactStore", "open_artifact_store"]


def open_artifact_store(uri: str | Path) -> ArtifactStore:
    """A store for `uri`: a local path or `file://` URI (S3 joins here later)."""
    text = str(uri)
    if text.startswith("file://"):
        return LocalArtifactStore(text.removeprefix("file://"))
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise ArtifactError(f"artifact root {text!r}: unsupported scheme {scheme!r}; use a path")
    return LocalArtifactStore(text)
