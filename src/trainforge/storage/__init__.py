"""Storage: the SQL tracking database (SQLite or PostgreSQL) and the object store under artifacts.

Only this package imports SQLAlchemy. `open_store()` opens the database named by `TRAINFORGE_DB`
(default: a SQLite file under `trainforge_home()`), migrating it to the newest schema first.
Names are imported on first use, so the trainer can use `storage.objects` (checkpoint files)
without loading the SQL store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainforge.storage.db import default_db_url, trainforge_home
    from trainforge.storage.sql_store import SqlStore, open_store

_EXPORTS = {
    "SqlStore": "trainforge.storage.sql_store",
    "default_db_url": "trainforge.storage.db",
    "open_store": "trainforge.storage.sql_store",
    "trainforge_home": "trainforge.storage.db",
}

__all__ = ["SqlStore", "default_db_url", "open_store", "trainforge_home"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'trainforge.storage' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
