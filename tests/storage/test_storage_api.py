"""The storage API is pinned: the contracts, `Page`, `all_items` and `open_store`."""

import trainforge
from trainforge import storage
from trainforge.storage import SqlStore, Store, contracts


def test_storage_exports_are_pinned() -> None:
    assert storage.__all__ == [
        "AuthStore", "CheckpointStore", "DataVersionStore", "ExperimentStore", "MetricStore",
        "OutboxStore",
        "Page",
        "PipelineRunStore",
        "RegistryEventStore", "RegistryStore", "RunCheckpointStore", "RunRecordStore", "RunStore",
        "SqlStore", "Store", "WebhookStore", "all_items", "open_store",
    ]
    assert trainforge.open_store is storage.open_store


def test_store_composes_every_area() -> None:
    areas = [contracts.ExperimentStore, contracts.RunStore, contracts.MetricStore,
             contracts.CheckpointStore, contracts.DataVersionStore, contracts.RegistryStore,
             contracts.WebhookStore, contracts.OutboxStore, contracts.AuthStore]
    assert all(area in Store.__mro__ for area in areas)
    for area in areas:
        for name in vars(area):
            if not name.startswith("_"):
                assert callable(getattr(SqlStore, name)), f"SqlStore lacks {area.__name__}.{name}"
