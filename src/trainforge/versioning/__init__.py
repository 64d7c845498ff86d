"""Versioning: content-addressed data versions (hash, manifest, snapshot, checkout, tags).

    >>> repository = open_repository(Settings.from_env(), store)  # doctest: +SKIP
    >>> snap = repository.snapshot("data/", name="fraud")  # doctest: +SKIP
    >>> repository.checkout("fraud@latest", Path("restored"))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports

if TYPE_CHECKING:
    from trainforge.versioning._manifest import Manifest, ManifestEntry
    from trainforge.versioning._names import names_of, version_label, version_names
    from trainforge.versioning._open import open_repository
    from trainforge.versioning._repository import (
        DataDiff,
        DataRepository,
        Snapshot,
        object_key,
    )

_EXPORTS = {
    "DataDiff": "trainforge.versioning._repository",
    "DataRepository": "trainforge.versioning._repository",
    "Manifest": "trainforge.versioning._manifest",
    "ManifestEntry": "trainforge.versioning._manifest",
    "Snapshot": "trainforge.versioning._repository",
    "names_of": "trainforge.versioning._names",
    "object_key": "trainforge.versioning._repository",
    "open_repository": "trainforge.versioning._open",
    "version_label": "trainforge.versioning._names",
    "version_names": "trainforge.versioning._names",
}

__all__ = ["DataDiff", "DataRepository", "Manifest", "ManifestEntry", "Snapshot",
           "names_of", "object_key", "open_repository", "version_label",
           "version_names"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
