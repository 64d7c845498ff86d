"""Where tracking goes when the caller names no store: the database and folders of
`TRAINFORGE_DB` / `TRAINFORGE_HOME`."""

from __future__ import annotations

import threading
from pathlib import Path

from trainforge.storage import Store, default_db_url, open_store, trainforge_home

_STORES: dict[str, Store] = {}
_STORES_LOCK = threading.Lock()


def default_store() -> Store:
    """The store at `default_db_url()`, opened once per URL and process, shared by its threads."""
    url = default_db_url()
    with _STORES_LOCK:
        if url not in _STORES:
            _STORES[url] = open_store(url)
        return _STORES[url]


def spill_directory() -> Path:
    """Where runs keep what the database could not take: `<TRAINFORGE_HOME>/spill`."""
    return trainforge_home() / "spill"
