"""The store a caller gets when it names none: the database of its `Settings`, opened once per
URL and process and shared by its threads. The SQL store (SQLAlchemy) is imported on the first
call, not with `trainforge.tracking`."""

from __future__ import annotations

import threading

from trainforge import storage
from trainforge.config import Settings
from trainforge.storage import Store

_STORES: dict[str, Store] = {}
_STORES_LOCK = threading.Lock()


def default_store(settings: Settings | None = None, create: bool = True) -> Store:
    """The store at `settings.database_url` (default: `Settings.from_env()`); with
    `create=False`, `DatabaseNotFound` unless the database exists (see `open_store`)."""
    url = (settings or Settings.from_env()).database_url.get_secret_value()
    with _STORES_LOCK:
        if url not in _STORES:
            _STORES[url] = storage.open_store(url, create)
        return _STORES[url]
