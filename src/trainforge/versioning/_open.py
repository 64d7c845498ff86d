"""The data repository of a home: objects under the artifact root, names in the database,
the file hash cache and the checkout cache under `<home>/cache/`."""

from __future__ import annotations

from pathlib import Path

from trainforge.config import Settings
from trainforge.errors import DataError, ObjectStoreError
from trainforge.ingest import HashCache
from trainforge.storage.contracts import DataVersionStore
from trainforge.storage.objects import open_object_store
from trainforge.versioning._repository import DataRepository


def open_repository(settings: Settings, versions: DataVersionStore) -> DataRepository:
    try:
        objects = open_object_store(settings.artifact_root)
    except ObjectStoreError as exc:
        raise DataError(f"artifact root {settings.artifact_root_shown!r}: {exc.problem}") from exc
    return DataRepository(objects, versions, hash_cache(settings), checkout_cache(settings))


def hash_cache(settings: Settings) -> HashCache:
    return HashCache(settings.home / "cache" / "file-hashes.sqlite")


def checkout_cache(settings: Settings) -> Path:
    """Where pinned versions are checked out for runs to read (`DataRepository.materialize`)."""
    return settings.home / "cache" / "data"
