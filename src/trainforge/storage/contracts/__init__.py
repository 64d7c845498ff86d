"""The store contracts: one small protocol per area, composed into `Store`.

    ExperimentStore   experiments and pipelines
    RunStore          runs: lifecycle, params, tags, system state, liveness, listing and search
    MetricStore       metric series and the latest / summary values `Run.metrics` shows
    CheckpointStore   records of the checkpoints runs saved
    DataVersionStore  content-addressed data versions
    RegistryStore     model versions, their stages, stage history and aliases
    WebhookStore      webhook subscriptions and the log of their deliveries
    OutboxStore       events written with what they announce, and their deliveries' state
    PipelineRunStore  pipeline runs and the attempts of their steps (the runner's state)
    AuthStore         the server's users and their API tokens
    Store             all of them, plus `close()`: what `open_store(url)` returns

A function takes the narrowest of these it needs (`RunCheckpointStore` and `RunRecordStore`
name the two combinations used in several places). `trainforge.storage.SqlStore` implements
`Store` on SQLite and PostgreSQL; `tests/contracts/` checks every rule below on each backend.

Rules every area follows:
- every method is one unit of work (its own transaction) and safe to call from any thread;
  a store object is meant to be shared by the threads of a process;
- methods hand out frozen records of `trainforge.entities` that the caller owns; the store keeps
  no reference to what it was given or handed out;
- `NotFound` names what is missing ("run 'x' not found"); `Conflict` says what a write collides
  with; `StoreUnavailable` means the database cannot be reached now (connection refused or
  lost, a lock wait timed out) and the call may be retried, or its write spilled and replayed;
- every datetime handed out is timezone-aware UTC;
- a metric value of NaN reads back as NaN, everywhere.

Listing (`Page`): every list method takes `limit` (>= 1, else `ValueError`) and `cursor`, and
returns one `Page` whose `next_cursor` fetches the next one (None on the last page). A cursor
is an opaque string, valid only for the method and the arguments (except `limit`) that made
it; a malformed cursor or one made for another listing raises `ValueError` naming it. Pages are
keyset pages: a cursor holds the sort key of the last item it covered, so walking all pages
returns every item that existed throughout exactly once, in order, whatever is inserted
meanwhile; an item inserted meanwhile shows up only if it sorts after the cursor (never, for
runs newer than the listing when the order is newest first). An item whose sort key changes
between two pages (a search sorted by a metric the run is still logging) may be seen twice or
not at all. `all_items(fetch)` walks every page for callers that need everything.
"""

from __future__ import annotations

from typing import Protocol

from trainforge.storage.contracts._auth import AuthStore
from trainforge.storage.contracts._data import DataVersionStore, PipelineRunStore, StepOutputs
from trainforge.storage.contracts._pages import DEFAULT_LIMIT, HISTORY_LIMIT, Page, all_items
from trainforge.storage.contracts._registry import OutboxStore, RegistryStore, WebhookStore
from trainforge.storage.contracts._runs import (
    CheckpointStore,
    ExperimentStore,
    MetricStore,
    RunStore,
)


class RunCheckpointStore(RunStore, CheckpointStore, Protocol):
    """Runs and their checkpoint records: what listing and pruning a run's checkpoints needs."""


class RunRecordStore(RunStore, MetricStore, DataVersionStore, Protocol):
    """Runs, their metric series and data versions: what a run's records (params, tags,
    metrics, data version, heartbeats, end) are written to, live or replayed from a spill
    file."""


class RegistryEventStore(RegistryStore, WebhookStore, Protocol):
    """Model versions and webhooks: what a promotion changes and notifies."""


class Store(
    ExperimentStore, RunStore, MetricStore, CheckpointStore, DataVersionStore, RegistryStore,
    WebhookStore, OutboxStore, PipelineRunStore, AuthStore, Protocol,
):
    """Every area of the store; `open_store(url)` returns one.

    `close()` releases the store's connections; the store can still be used afterwards (it
    reconnects). Its repr never shows a password.
    """

    def close(self) -> None: ...


__all__ = [
    "AuthStore",
    "CheckpointStore",
    "DEFAULT_LIMIT",
    "DataVersionStore",
    "ExperimentStore",
    "HISTORY_LIMIT",
    "MetricStore",
    "OutboxStore",
    "Page",
    "PipelineRunStore",
    "RegistryEventStore",
    "RegistryStore",
    "RunCheckpointStore",
    "RunRecordStore",
    "RunStore",
    "StepOutputs",
    "Store",
    "WebhookStore",
    "all_items",
]
