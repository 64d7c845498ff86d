"""Storage: the store contracts, their SQL implementation (SQLite or PostgreSQL) and the object
store under artifacts and checkpoints.

`open_store(url)` opens the store a URL names (`Settings.database_url`), chosen by its scheme
(`backends.py`); code takes the narrowest protocol of `contracts` it needs (`RunStore`,
`MetricStore`, ... or `Store`). List methods return a `Page`; `all_items` walks every page.
Only this package imports SQLAlchemy. `SqlStore` and `open_store` are imported on first use,
so the trainer can use `storage.objects` (checkpoint files) without loading the SQL store.

    >>> from trainforge.storage import all_items, open_store
    >>> store = open_store("sqlite:///runs.db")                                # doctest: +SKIP
    >>> runs = all_items(lambda cursor: store.list_runs(cursor=cursor))        # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainforge._lazy import lazy_exports
from trainforge.storage.contracts import (
    AuthStore,
    CheckpointStore,
    DataVersionStore,
    ExperimentStore,
    MetricStore,
    OutboxStore,
    Page,
    PipelineRunStore,
    RegistryEventStore,
    RegistryStore,
    RunCheckpointStore,
    RunRecordStore,
    RunStore,
    Store,
    WebhookStore,
    all_items,
)

if TYPE_CHECKING:
    from trainforge.storage.backends import open_store
    from trainforge.storage.sql_store import SqlStore

_EXPORTS = {
    "SqlStore": "trainforge.storage.sql_store",
    "open_store": "trainforge.storage.backends",
}

__all__ = [
    "AuthStore",
    "CheckpointStore",
    "DataVersionStore",
    "ExperimentStore",
    "MetricStore",
    "OutboxStore",
    "Page",
    "PipelineRunStore",
    "RegistryEventStore",
    "RegistryStore",
    "RunCheckpointStore",
    "RunRecordStore",
    "RunStore",
    "SqlStore",
    "Store",
    "WebhookStore",
    "all_items",
    "open_store",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
