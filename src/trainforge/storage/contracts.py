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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from trainforge.entities import (
    CheckpointRecord,
    DataTag,
    DataVersion,
    DeliveryState,
    EventDelivery,
    Experiment,
    MetricPoint,
    ModelStage,
    ModelVersion,
    OutboxEvent,
    Pipeline,
    PipelineRun,
    PipelineRunStatus,
    Run,
    RunStatus,
    StageChange,
    StepRun,
    StepState,
    Webhook,
    WebhookDelivery,
)

T = TypeVar("T")
DEFAULT_LIMIT = 100
HISTORY_LIMIT = 10_000  # metric series are long and their points small


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing: `items` in the listing's order, and the cursor of the next page
    (None when this is the last)."""

    items: tuple[T, ...]
    next_cursor: str | None = None


def all_items(fetch: Callable[[str | None], Page[T]]) -> list[T]:
    """Every item of a listing: `fetch(cursor)` is called with None, then with each page's
    `next_cursor` until there is none.

    Example: `all_items(lambda cursor: store.list_checkpoints(run_id, cursor=cursor))`.
    """
    items: list[T] = []
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        items.extend(page.items)
        if page.next_cursor is None:
            return items
        cursor = page.next_cursor


class ExperimentStore(Protocol):
    """Experiments (named groups of runs) and pipelines (a DAG's wiring).

    - `get_or_create_experiment` is a race-free upsert by name: concurrent callers with one name
      all get the same experiment; the description is set only when it is created;
    - `upsert_pipeline` inserts or replaces the pipeline with that id (last writer wins);
    - `list_experiments` orders by name (names are unique); the cursor holds the last name;
    - `get_experiment` raises `NotFound` for an unknown id. Nothing here raises `Conflict`;
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def get_or_create_experiment(self, name: str, description: str = "") -> Experiment: ...

    def get_experiment(self, experiment_id: str) -> Experiment: ...

    def list_experiments(
        self, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[Experiment]: ...

    def upsert_pipeline(self, pipeline: Pipeline) -> Pipeline: ...


class RunStore(Protocol):
    """Runs: created RUNNING, ended once per attempt (a resume reopens one), never deleted.

    User data and system state never share a namespace: `params` and `tags` belong to the
    user; `system` holds what trainforge itself reads back (liveness host and pid, checkpoint
    location and policy, the spec path and overrides a run started with), and `spec_hash` the
    hash of the resolved spec a pipeline run executes (indexed, so that `resume: auto` finds
    the runs of one spec with `list_runs(spec_hash=...)`).

    - `create_run`: a new RUNNING run, heartbeat now. `Conflict` when `run_id` is taken (the
      only `Conflict` of this area);
      `NotFound` for a missing experiment, pipeline or parent run; `ValueError` for a
      `spec_hash` that is empty or longer than 64 characters;
    - `log_params`, `set_tags`, `set_system` merge top-level keys (a key given again is
      replaced) as one read-modify-write under the run's lock: concurrent merges into one run
      lose no key. They are idempotent;
    - `set_data_version` links a stored data version (`NotFound` for a missing one);
    - `end_run` sets status, error and end time (now by default), overwriting an earlier
      end (a replayed end record lands the same); `reopen_run` makes a run RUNNING again (no
      end, no error, heartbeat now), whatever its status; with `job` (the key of a multi-node
      job, whose launchers all reopen the run) it does so under the run's lock and records
      `system["job"] = job`, and a run already RUNNING for that same job is returned as it is
      (a later launcher joins), while one RUNNING for another job is a `Conflict`;
    - `heartbeat` sets the heartbeat to now and adds `device_hours` (>= 0, else `ValueError`);
      a CRASHED run that beats is alive after all and becomes RUNNING again;
    - `mark_crashed` ends as CRASHED every RUNNING run not seen since `heartbeat_before` (its
      end is its last heartbeat) and returns them, oldest first;
    - every method taking a `run_id` raises `NotFound` for an unknown run;
    - `find_run` takes what a person types: a whole run id, or the start of one (the short ids
      tables show). An exact id wins; else the one run whose id starts with the text (case
      matters); `NotFound` when none does, `Ambiguous` listing candidates when several do,
      `ValueError` for empty text;
    - `list_runs` orders newest `started_at` first, then by run id; the cursor holds that pair,
      so runs started after the listing began never show up on its later pages;
    - `search_runs` filters and sorts with the query language of `trainforge.storage.query`
      (`metrics.`, `params.`, `tags.`, `system.` fields and run attributes, compared with
      numbers, strings or booleans, joined by `and` / `or` and parentheses; `QueryError` for a
      malformed filter or sort), then newest first, then by run id; the
      cursor holds the sort values of the last run it covered (see the module docstring for
      values that change meanwhile);
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def create_run(
        self,
        experiment_id: str,
        params: dict[str, Any],
        environment: dict[str, Any],
        artifact_uri: str,
        git_commit: str | None = None,
        git_dirty: bool | None = None,
        pipeline_id: str | None = None,
        run_id: str | None = None,
        parent_run_id: str | None = None,
        tags: dict[str, Any] | None = None,
        system: dict[str, Any] | None = None,
        spec_hash: str | None = None,
    ) -> Run: ...

    def get_run(self, run_id: str) -> Run: ...

    def find_run(self, id_or_prefix: str) -> Run: ...

    def list_runs(
        self,
        experiment_id: str | None = None,
        status: RunStatus | None = None,
        pipeline_id: str | None = None,
        spec_hash: str | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[Run]: ...

    def search_runs(
        self,
        experiment_ids: Sequence[str] | None = None,
        filter: str | None = None,
        sort: str | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[Run]: ...

    def log_params(self, run_id: str, params: dict[str, Any]) -> None: ...

    def set_tags(self, run_id: str, tags: dict[str, Any]) -> None: ...

    def set_system(self, run_id: str, values: dict[str, Any]) -> None: ...

    def set_data_version(self, run_id: str, data_version_id: str) -> None: ...

    def end_run(
        self, run_id: str, status: RunStatus, error: str | None = None,
        ended_at: datetime | None = None,
    ) -> Run: ...

    def reopen_run(self, run_id: str, job: str | None = None) -> Run: ...

    def heartbeat(self, run_id: str, device_hours: float = 0.0) -> None: ...

    def mark_crashed(self, heartbeat_before: datetime) -> list[Run]: ...


class MetricStore(Protocol):
    """Metric series of runs, and the latest values `Run.metrics`, filters and sorts read.

    - `log_metrics` appends points (any order; the series is read back by step, then
      timestamp, then insertion) and moves each key's latest value forward, in one unit of
      work. With a `batch_id` it is idempotent: a batch already stored for the run is skipped
      whole and False returned, so replaying a spilled batch never duplicates a point;
    - a key's latest value is its summary value when one was set (`set_summary_metrics`, a
      key given again is replaced), else its last logged point (highest step, then latest
      timestamp);
    - `delete_metrics_after(run_id, step)` rewinds the series to the checkpoint a run resumes
      from: the points above `step` go, and each latest value taken from one of them falls back
      to the key's last point left; summaries stay. It returns how many points were deleted;
    - `get_metric_history` pages through a series (cursor: the last point's position); with
      `max_points` (>= 2, else `ValueError`) it returns the whole series downsampled to at most
      that many points (each bucket's minimum and maximum), in one page, and takes no cursor;
    - `metric_keys` lists a run's series names in order (cursor: the last name);
    - every method raises `NotFound` for an unknown run; an unknown key is an empty series.
      Nothing here raises `Conflict`;
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def log_metrics(
        self, run_id: str, points: Sequence[MetricPoint], batch_id: str | None = None
    ) -> bool: ...

    def set_summary_metrics(self, run_id: str, metrics: dict[str, float]) -> None: ...

    def get_metric_history(
        self,
        run_id: str,
        key: str,
        max_points: int | None = None,
        limit: int = HISTORY_LIMIT,
        cursor: str | None = None,
    ) -> Page[MetricPoint]: ...

    def metric_keys(
        self, run_id: str, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[str]: ...

    def delete_metrics_after(self, run_id: str, step: int) -> int: ...


class CheckpointStore(Protocol):
    """Records of the checkpoints a run saved; storage holds the checkpoints themselves.

    - a record is keyed by (run, step): recording a step again (a resumed run saving it anew)
      overwrites uri, epoch, metrics and creation time and clears its deletion;
    - `mark_checkpoint_deleted` records that storage confirmed the deletion of the files; the
      record stays (the run's history still shows it) and a second call keeps the first time.
      `NotFound` when the run has no record at that step;
    - `list_checkpoints` orders by step (cursor: the last step); deleted ones only with
      `include_deleted`;
    - non-finite metric values read back as NaN; every method raises `NotFound` for an
      unknown run. Nothing here raises `Conflict`;
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def record_checkpoint(
        self, run_id: str, step: int, uri: str, epoch: int | None = None,
        metrics: dict[str, float] | None = None,
    ) -> CheckpointRecord: ...

    def mark_checkpoint_deleted(self, run_id: str, step: int) -> None: ...

    def list_checkpoints(
        self,
        run_id: str,
        include_deleted: bool = False,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[CheckpointRecord]: ...


class DataVersionStore(Protocol):
    """Content-addressed data versions: an id names exactly one set of files, so a version is
    never changed once stored.

    - `put_data_version` is a race-free insert: putting an id already stored returns the stored
      record unchanged (whatever else the argument says) and never raises `Conflict`;
    - `get_data_version` raises `NotFound` for an unknown id;
    - `list_data_versions` orders newest first (cursor: creation time, then id);
      `data_version_ids(prefix)` gives up to `limit` stored ids starting with `prefix`, sorted;
    - data profiles (`trainforge.profiles`, as JSON bytes) are stored under a key: a file's
      sha256 (`kind` "file") or a data version id (`kind` "version"); `put_data_profile`
      replaces a stored one, `get_data_profiles` returns those of the keys it finds;
    - a tag (`name@tag`) points at one stored version: `set_data_tag` creates or moves it
      (`NotFound` for an unknown version), `get_data_tag` raises `NotFound` naming
      `name@tag`; `list_data_tags` orders by name, then tag, those of one version if given;
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def put_data_version(self, version: DataVersion) -> DataVersion: ...

    def get_data_version(self, data_version_id: str) -> DataVersion: ...

    def list_data_versions(
        self, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[DataVersion]: ...

    def data_version_ids(self, prefix: str, limit: int = 2) -> list[str]: ...

    def set_data_tag(self, name: str, tag: str, data_version_id: str) -> DataTag: ...

    def put_data_profile(self, key: str, kind: str, rows: int, profile: bytes) -> None: ...

    def get_data_profiles(self, keys: Sequence[str]) -> dict[str, bytes]: ...

    def get_data_tag(self, name: str, tag: str) -> DataTag: ...

    def list_data_tags(self, data_version_id: str | None = None) -> list[DataTag]: ...


class RegistryStore(Protocol):
    """Registered model versions, numbered "1", "2", ... per model name, with their stage
    history and aliases.

    - `create_model_version` takes the next number; concurrent registrations of one model get
      distinct numbers (`Conflict` only if no number could be taken after many retries).
      `NotFound` for a missing run. It adds the version's first history entry (`registered`);
    - `get_model_version` raises `NotFound` naming the model and version;
    - `list_model_versions` orders by model name, then version number (cursor: that pair); a
      version's fields never change here, only its stage (`change_stage`), and it is never
      deleted;
    - `change_stage` moves a version to a stage as decided when it was in `expected_from` and
      the target stage (production and canary, which hold at most one version of a model)
      was held by `expected_holder` (None: by none). The holder is moved to archived (a
      `replaced` history entry) and the version to the stage (a `promoted` one), in one unit of
      work. When another change came first (the version's stage or the holder differs),
      `Conflict` and nothing changes: of concurrent changes decided on one state, one wins.
      It does not judge whether the move is allowed (`trainforge.registry` does);
    - `record_refusal` adds a `refused` history entry (the stage stays), under the model's lock
      as a change;
    - every `promoted`, `replaced` and `refused` entry is written to the outbox in the unit of
      work that adds it (`OutboxStore`: `model.stage_changed`, or `model.promotion_refused`
      for a refusal; subject `model:NAME`): the entry and its event commit or roll back
      together;
    - `get_stage_holder` is the version of a model in production or canary, or None
      (`ValueError` for another stage): what serving polls to follow stage changes;
    - `list_stage_changes` is a model's history (of one version, when given), oldest first
      (cursor: the entry's id);
    - `set_alias` points an alias at a version (moving it from another); `get_alias` is the
      version an alias names (`NotFound` when none); `list_aliases` maps each alias of a model
      to its version;
    - every method naming a version raises `NotFound` naming the model and version;
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def create_model_version(
        self,
        model_name: str,
        run_id: str,
        artifact_uri: str,
        stage: ModelStage,
        metrics: dict[str, float],
        data_version_id: str | None = None,
        git_commit: str | None = None,
        features_hash: str | None = None,
        environment: dict[str, Any] | None = None,
    ) -> ModelVersion: ...

    def get_model_version(self, model_name: str, version: str) -> ModelVersion: ...

    def list_model_versions(
        self, model_name: str | None = None, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[ModelVersion]: ...

    def change_stage(
        self,
        model_name: str,
        version: str,
        to: ModelStage,
        *,
        expected_from: ModelStage,
        expected_holder: str | None,
        user: str,
        reason: str,
        forced: bool = False,
        gate_report: Sequence[dict[str, Any]] = (),
    ) -> StageChange: ...

    def record_refusal(
        self, model_name: str, version: str, to: ModelStage, *, user: str, reason: str,
        gate_report: Sequence[dict[str, Any]],
    ) -> StageChange: ...

    def get_stage_holder(self, model_name: str, stage: ModelStage) -> ModelVersion | None: ...

    def list_stage_changes(
        self, model_name: str, version: str | None = None, limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[StageChange]: ...

    def set_alias(self, model_name: str, alias: str, version: str) -> None: ...

    def get_alias(self, model_name: str, alias: str) -> ModelVersion: ...

    def list_aliases(self, model_name: str) -> dict[str, str]: ...


class WebhookStore(Protocol):
    """Webhook subscriptions and the log of every delivery attempt.

    - `add_webhook` stores a subscription (ids 1, 2, ... in order of creation); the secret is
      not given to the store, only the name of the environment variable holding it;
    - `list_webhooks` orders by id (cursor: the id);
    - `record_delivery` logs one attempt (`NotFound` for an unknown webhook);
      `list_deliveries` lists attempts newest first (of one webhook, when given; cursor: the
      attempt's id);
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def add_webhook(self, url: str, events: Sequence[str], secret_env: str) -> Webhook: ...

    def list_webhooks(
        self, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[Webhook]: ...

    def record_delivery(
        self, webhook_id: int, event_id: str, event: str, attempt: int,
        status_code: int | None, error: str | None, delivered: bool,
    ) -> WebhookDelivery: ...

    def list_deliveries(
        self, webhook_id: int | None = None, limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[WebhookDelivery]: ...


class OutboxStore(Protocol):
    """The outbox: events written in the unit of work of what they announce, and the delivery
    of each to every webhook subscribed to it when it was written (one `EventDelivery` per
    webhook, `pending` and due at once). Deliverers send them off the writer's path.

    - `add_event` writes an event about `subject` (`run:RUN_ID`, `model:NAME`) on its own;
      `set_tags_and_announce` merges `tags` into a run's tags (as `set_tags`) and writes the
      event in the same unit of work (`NotFound` for an unknown run, and nothing written).
      Stage changes write theirs through `RegistryStore`;
    - a webhook's deliveries of one subject are in order: `delivery_heads` lists the earliest
      `pending` delivery of each (webhook, subject), soonest due first, and `claim_delivery`
      takes only such a head. The claim is a lease: it succeeds (returning the delivery) when
      the delivery is pending, due at `now`, not leased by anyone at `now` and no earlier
      event of its subject is pending for its webhook, else None; of concurrent claims (any
      processes, any machines) one wins;
    - `finish_delivery` logs the attempt (a `WebhookDelivery` linked to the delivery, numbered
      after the earlier ones) and, while `owner` still holds the lease, sets the delivery's
      state, next attempt and last error and ends the lease; a lease taken over meanwhile
      keeps the delivery as its new holder leaves it (the attempt is logged all the same);
    - `redeliver` makes a `delivered` or `dead` delivery `pending` again, due at `now`, with a
      new round of attempts from `now`; `Conflict` naming it when it is pending already;
    - `get_event_delivery`, `finish_delivery` and `redeliver` raise `NotFound` naming the
      delivery id; `list_event_deliveries` lists newest first (of one state and one webhook,
      when given; cursor: the delivery's id);
    - times are the caller's (`now`): every deliverer should run on a synchronised clock;
    - as every area: one unit of work per call, from any thread, frozen records the caller
      owns, `StoreUnavailable` from any method while the database cannot be reached.
    """

    def add_event(self, name: str, subject: str, data: dict[str, Any], *, event_id: str,
                  occurred_at: datetime) -> OutboxEvent: ...

    def set_tags_and_announce(self, run_id: str, tags: dict[str, Any], name: str,
                              data: dict[str, Any], *, event_id: str,
                              occurred_at: datetime) -> OutboxEvent: ...

    def delivery_heads(self, limit: int = DEFAULT_LIMIT) -> list[EventDelivery]: ...

    def claim_delivery(self, delivery_id: int, owner: str, *, now: datetime,
                       leased_until: datetime) -> EventDelivery | None: ...

    def finish_delivery(
        self, delivery_id: int, owner: str, *, status_code: int | None, error: str | None,
        state: DeliveryState, next_attempt_at: datetime | None,
    ) -> WebhookDelivery: ...

    def redeliver(self, delivery_id: int, now: datetime) -> EventDelivery: ...

    def get_event_delivery(self, delivery_id: int) -> EventDelivery: ...

    def list_event_deliveries(
        self, state: DeliveryState | None = None, webhook_id: int | None = None,
        limit: int = DEFAULT_LIMIT, cursor: str | None = None,
    ) -> Page[EventDelivery]: ...


class StepOutputs(NamedTuple):
    """One attempt's recorded outputs (value references, or `{"memory": type}`), and its
    pipeline run's status and last activity."""

    status: PipelineRunStatus
    active_at: datetime
    outputs: dict[str, Any]


class PipelineRunStore(Protocol):
    """Pipeline runs and the attempts of their steps: what the runner persists
    (`trainforge.orchestration`), what `resume` and `explain-cache` read back.

    - `create_pipeline_run` records a `running` execution of an upserted pipeline (`NotFound`
      naming it otherwise; `Conflict` when the id is taken); `set_pipeline_run_status` sets
      `ended_at` when the status is terminal and clears it when it is `running` again (a
      resume);
    - `find_pipeline_run` takes an id or a unique prefix of one (`Ambiguous` listing the
      matches when several start so);
    - `add_step_run` inserts one attempt and returns it with its id; `update_step_run` changes
      its state and, when given, its timings, error, cache key and parts, outputs and
      `cached_from`; `list_step_runs` returns a pipeline run's attempts in the order they were
      added;
    - `find_cached(cache_key, newer_than)` is the newest `succeeded` attempt with that key that
      ended after `newer_than` (any time when None): the execution a cache hit reuses, never a
      `cached` copy of it; `previous_step_run` is the newest attempt of `step` of the same
      pipeline with a cache key, added before `before` (a step run id): what `explain-cache`
      compares an attempt with;
    - `list_step_outputs` is every attempt's recorded outputs with its pipeline run's status
      and last activity (its end, or its start while it runs): what the value store's gc
      reads.
    """

    def create_pipeline_run(self, pipeline_run_id: str, pipeline_id: str,
                            source: dict[str, Any], options: dict[str, Any],
                            run_id: str | None = None) -> PipelineRun: ...

    def get_pipeline_run(self, pipeline_run_id: str) -> PipelineRun: ...

    def find_pipeline_run(self, id_or_prefix: str) -> PipelineRun: ...

    def set_pipeline_run_status(self, pipeline_run_id: str,
                                status: PipelineRunStatus) -> PipelineRun: ...

    def add_step_run(self, pipeline_run_id: str, step: str, attempt: int, state: StepState,
                     started_at: datetime | None = None) -> StepRun: ...

    def update_step_run(
        self, step_run_id: int, state: StepState, *, started_at: datetime | None = None,
        ended_at: datetime | None = None, error: str | None = None,
        cache_key: str | None = None, cache_parts: dict[str, Any] | None = None,
        outputs: dict[str, Any] | None = None, cached_from: int | None = None,
    ) -> None: ...

    def list_step_runs(self, pipeline_run_id: str) -> list[StepRun]: ...

    def find_cached(self, cache_key: str, newer_than: datetime | None = None) -> StepRun | None: ...

    def previous_step_run(self, pipeline_id: str, step: str, before: int) -> StepRun | None: ...

    def list_step_outputs(self) -> list[StepOutputs]: ...


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
    WebhookStore, OutboxStore, PipelineRunStore, Protocol,
):
    """Every area of the store; `open_store(url)` returns one.

    `close()` releases the store's connections; the store can still be used afterwards (it
    reconnects). Its repr never shows a password.
    """

    def close(self) -> None: ...
