"""Storage: the SQL tracking database (SQLite or PostgreSQL) and the object store under artifacts.

Only this package imports SQLAlchemy. `open_store(url)` opens the database at `url`
(`Settings.database_url`), migrating it to the newest schema first.
Names are imported on first use, so the trainer can use `storage.objects` (checkpoint files)
without loading the SQL store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainforge.storage.sql_store import SqlStore, open_store

_EXPORTS = {
    "SqlStore": "trainforge.storage.sql_store",
    "open_store": "trainforge.storage.sql_store",
}

__all__ = ["SqlStore", "open_store"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'trainforge.storage' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
