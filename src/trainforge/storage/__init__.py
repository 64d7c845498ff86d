"""Storage: the store contracts, their SQL implementation (SQLite or PostgreSQL) and the
artifact stores.

`open_store(url)` opens the store a URL names, chosen by its scheme (`backends.py`); code takes
the narrowest protocol of `contracts.py` it needs (`RunStore`, `MetricStore`, ... or `Store`).
List methods return a `Page`; `all_items` walks every page. Only this package imports
SQLAlchemy.

    >>> from trainforge.storage import all_items, open_store
    >>> store = open_store("sqlite:///runs.db")                                # doctest: +SKIP
    >>> runs = all_items(lambda cursor: store.list_runs(cursor=cursor))        # doctest: +SKIP
"""

from trainforge.storage.backends import open_store
from trainforge.storage.contracts import (
    CheckpointStore,
    DataVersionStore,
    ExperimentStore,
    MetricStore,
    Page,
    RegistryStore,
    RunCheckpointStore,
    RunRecordStore,
    RunStore,
    Store,
    all_items,
)
from trainforge.storage.db import default_db_url, trainforge_home
from trainforge.storage.sql_store import SqlStore

__all__ = [
    "CheckpointStore",
    "DataVersionStore",
    "ExperimentStore",
    "MetricStore",
    "Page",
    "RegistryStore",
    "RunCheckpointStore",
    "RunRecordStore",
    "RunStore",
    "SqlStore",
    "Store",
    "all_items",
    "default_db_url",
    "open_store",
    "trainforge_home",
]
