"""`SqlStore`: the one SQL implementation of `trainforge.storage.Store`, over SQLAlchemy.

The URL picks the backend: `sqlite:///path/to/file.db` or `postgresql+psycopg://user@host/db`
(`open_store(url)` chooses this class for both). The rules of `storage/contracts.py` hold;
beyond them:
- the schema is migrated to the newest revision when the store is opened; opened with
  `create=False`, a database that does not exist (a SQLite file) or holds no schema raises
  `DatabaseNotFound`, and nothing is created;
- every public method is one transaction; writes on SQLite take the write lock when they begin,
  so read-modify-write methods (`log_params`, `set_tags`, `set_system`, `set_summary_metrics`)
  never lose an update, and on PostgreSQL they lock the run row;
- `log_metrics` moves the run's latest values (`run_metrics`) forward in the transaction that
  inserts the points; a batch id is a row of `metric_batches`, claimed first;
- a lost connection, a refused one or a lock wait that timed out raises `StoreUnavailable`;
  the URL's password appears in no message and no repr;
- ids are uuid4 hex; a model version number is the model's highest plus one, retried when a
  concurrent registration took it first;
- the registry's stage changes, history, aliases and webhook log are `sql_registry`'s
  statements: a stage change locks its model's version rows and checks the state it was
  decided on, so of concurrent changes one wins and the others raise `Conflict`; the outbox
  is `sql_outbox`'s (`SqlOutbox`, mixed in);
- a metric value of NaN is stored as NULL; in a checkpoint's metrics, NaN and infinities are
  stored as JSON null, as in a model version's;
- pages are keyset queries (`sql_pages`): each fetches one row more than it returns, and its
  cursor (`cursors`) holds the last row's sort key.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Integer, case, cast, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from trainforge.entities import (
    CheckpointRecord,
    DataTag,
    DataVersion,
    Experiment,
    MetricPoint,
    ModelStage,
    ModelVersion,
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
from trainforge.errors import Ambiguous, Conflict, NotFound, StoreError, StoreUnavailable
from trainforge.storage import (
    sql_checkpoints,
    sql_data_versions,
    sql_metrics,
    sql_pipeline_runs,
    sql_registry,
)
from trainforge.storage.contracts import DEFAULT_LIMIT, HISTORY_LIMIT, Page, StepOutputs
from trainforge.storage.cursors import Listing, check_limit
from trainforge.storage.db import WRITE, make_engine, migrate, shown_url
from trainforge.storage.query import parse_filter, parse_sort
from trainforge.storage.records import (
    metrics_json,
    to_data_version,
    to_delivery,
    to_experiment,
    to_model_version,
    to_pipeline,
    to_run,
    to_stage_change,
    to_webhook,
)
from trainforge.storage.sql_outbox import SqlOutbox
from trainforge.storage.sql_pages import OrderKey, fetch_page
from trainforge.storage.sql_search import newest_first, search_query
from trainforge.storage.tables import (
    Base,
    CheckpointRow,
    DataVersionRow,
    ExperimentRow,
    MetricRow,
    ModelVersionRow,
    PipelineRow,
    RunRow,
    as_utc,
    utcnow,
)

# Both dialects spell upserts the same way (ON CONFLICT); other backends are refused.
_BACKENDS: dict[str, Callable[[type[Base]], sqlite.Insert | postgresql.Insert]] = {
    "sqlite": sqlite.insert, "postgresql": postgresql.insert,
}
# Each retry means another process took the number we picked; this bounds a pathological storm.
_VERSION_ATTEMPTS = 50
_SPEC_HASH_LENGTH = 64  # the width of `runs.spec_hash`
_CANDIDATES_SHOWN = 5  # run ids an `Ambiguous` error lists
_BY_NAME = (OrderKey(ExperimentRow.name, (str,)),)
_BY_MODEL_AND_NUMBER = (OrderKey(ModelVersionRow.model_name, (str,)),
                        OrderKey(cast(ModelVersionRow.version, Integer), (int,)))
RowT = TypeVar("RowT", bound=Base)


def new_id() -> str:
    """A fresh id: uuid4 as 32 hex characters."""
    return uuid.uuid4().hex


class SqlStore(SqlOutbox):
    """The store on SQLite or PostgreSQL; safe to share between threads. The outbox area's
    methods come from `SqlOutbox`."""

    def __init__(self, url: str, create: bool = True) -> None:
        backend = _backend(url)
        self._url = url
        self._engine = make_engine(url, create)
        self._dialect = backend
        self._insert = _BACKENDS[backend]
        try:
            with _translated(self):
                migrate(self._engine, create)
        except BaseException:
            self._engine.dispose()
            raise
        self._reader = sessionmaker(self._engine, expire_on_commit=False)
        writer = self._engine.execution_options(**{WRITE: True})
        self._writer = sessionmaker(writer, expire_on_commit=False)

    def __repr__(self) -> str:
        return f"SqlStore({make_url(self._url).render_as_string(hide_password=True)!r})"

    def close(self) -> None:
        """Close every pooled connection; the store can still be used afterwards."""
        self._engine.dispose()

    @contextmanager
    def _read(self) -> Iterator[Session]:
        with _translated(self), self._reader() as session:
            yield session

    @contextmanager
    def _write(self) -> Iterator[Session]:
        with _translated(self), self._writer.begin() as session:
            yield session

    # experiments and pipelines

    def get_or_create_experiment(self, name: str, description: str = "") -> Experiment:
        """The experiment called `name`, created with `description` if there is none yet."""
        row = {"experiment_id": new_id(), "name": name, "description": description,
               "owner": "", "created_at": utcnow()}
        with self._write() as session:
            session.execute(self._insert(ExperimentRow).values(row).on_conflict_do_nothing())
            found = session.scalars(select(ExperimentRow).where(ExperimentRow.name == name)).one()
            return to_experiment(found)

    def get_experiment(self, experiment_id: str) -> Experiment:
        with self._read() as session:
            return to_experiment(_get(session, ExperimentRow, experiment_id, "experiment"))

    def list_experiments(
        self, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[Experiment]:
        """Experiments by name."""
        with self._read() as session:
            rows, next_cursor = fetch_page(session, Listing("list_experiments"),
                                           select(ExperimentRow), _BY_NAME, limit, cursor)
            return Page(tuple(to_experiment(row[0]) for row in rows), next_cursor)

    def upsert_pipeline(self, pipeline: Pipeline) -> Pipeline:
        """Insert `pipeline`, or replace the stored one with the same id (keeping created_at)."""
        fields = {"name": pipeline.name, "dag_config": pipeline.dag_config,
                  "schedule": pipeline.schedule, "created_by": pipeline.created_by}
        statement = self._insert(PipelineRow).values(
            pipeline_id=pipeline.pipeline_id, created_at=utcnow(), **fields
        ).on_conflict_do_update(index_elements=["pipeline_id"], set_=fields)
        with self._write() as session:
            session.execute(statement)
            return to_pipeline(_get(session, PipelineRow, pipeline.pipeline_id, "pipeline"))

    # runs

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
    ) -> Run:
        """A new RUNNING run (its heartbeat now); `Conflict` if `run_id` is taken, `NotFound`
        for a missing experiment, pipeline or parent run, `ValueError` for a bad `spec_hash`."""
        if spec_hash is not None and not 0 < len(spec_hash) <= _SPEC_HASH_LENGTH:
            raise ValueError(f"spec_hash must be 1 to {_SPEC_HASH_LENGTH} characters, got "
                             f"{spec_hash!r}")
        now = utcnow()
        row = RunRow(
            run_id=run_id or new_id(), experiment_id=experiment_id, pipeline_id=pipeline_id,
            parent_run_id=parent_run_id, status=RunStatus.RUNNING.value, params=params,
            tags=dict(tags or {}), system=dict(system or {}), spec_hash=spec_hash,
            environment=environment, artifact_uri=artifact_uri, started_at=now,
            heartbeat_at=now, device_hours=0.0, git_commit=git_commit, git_dirty=git_dirty,
        )
        try:
            with self._write() as session:
                _get(session, ExperimentRow, experiment_id, "experiment")
                if pipeline_id is not None:
                    _get(session, PipelineRow, pipeline_id, "pipeline")
                if parent_run_id is not None:
                    _get(session, RunRow, parent_run_id, "parent run")
                if session.get(RunRow, row.run_id) is not None:
                    raise Conflict(f"run {row.run_id!r} already exists")
                session.add(row)
        except IntegrityError as exc:
            raise Conflict(f"run {row.run_id!r} already exists") from exc
        return to_run(row, {})

    def get_run(self, run_id: str) -> Run:
        with self._read() as session:
            row = _get(session, RunRow, run_id, "run")
            return to_run(row, sql_metrics.latest_values(session, [run_id])[run_id])

    def find_run(self, id_or_prefix: str) -> Run:
        """The run with id `id_or_prefix`, else the one run whose id starts with it (compared
        with `substr`, so case matters on both backends and `%` or `_` are plain characters);
        `NotFound`, `Ambiguous` or `ValueError` as the protocol says."""
        if not id_or_prefix:
            raise ValueError("a run id or prefix must not be empty")
        starts = func.substr(RunRow.run_id, 1, len(id_or_prefix)) == id_or_prefix
        with self._read() as session:
            row = session.get(RunRow, id_or_prefix)
            if row is None:
                found = list(session.scalars(select(RunRow.run_id).where(starts)
                                             .order_by(RunRow.run_id)
                                             .limit(_CANDIDATES_SHOWN + 1)))
                if not found:
                    raise NotFound(f"run {id_or_prefix!r} not found")
                if len(found) > 1:
                    count = session.scalar(select(func.count()).select_from(RunRow).where(starts))
                    raise _ambiguous(id_or_prefix, found[:_CANDIDATES_SHOWN], count or 0)
                row = _get(session, RunRow, found[0], "run")
            return to_run(row, sql_metrics.latest_values(session, [row.run_id])[row.run_id])

    def list_runs(
        self,
        experiment_id: str | None = None,
        status: RunStatus | None = None,
        pipeline_id: str | None = None,
        spec_hash: str | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[Run]:
        """Runs newest `started_at` first, then by id; only those of the experiment, status,
        pipeline and spec hash given (each None: any)."""
        state = None if status is None else RunStatus(status).value
        wanted = [(RunRow.experiment_id, experiment_id), (RunRow.status, state),
                  (RunRow.pipeline_id, pipeline_id), (RunRow.spec_hash, spec_hash)]
        query = select(RunRow.run_id).where(
            *(column == value for column, value in wanted if value is not None)
        )
        listing = Listing("list_runs", (experiment_id, state, pipeline_id, spec_hash))
        with self._read() as session:
            rows, next_cursor = fetch_page(session, listing, query, newest_first(self._dialect),
                                           limit, cursor)
            return Page(tuple(_runs_in_order(session, [row[0] for row in rows])), next_cursor)

    def search_runs(
        self,
        experiment_ids: Sequence[str] | None = None,
        filter: str | None = None,
        sort: str | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[Run]:
        """The runs matching `filter`, ordered by `sort` (see `storage.query`), then newest
        first, then by id; `QueryError` for a malformed filter or sort."""
        experiments = None if experiment_ids is None else list(experiment_ids)
        query, keys = search_query(self._dialect, experiments, parse_filter(filter),
                                   parse_sort(sort))
        listing = Listing("search_runs", (experiments, filter, sort))
        with self._read() as session:
            rows, next_cursor = fetch_page(session, listing, query, keys, limit, cursor)
            return Page(tuple(_runs_in_order(session, [row[0] for row in rows])), next_cursor)

    def log_params(self, run_id: str, params: dict[str, Any]) -> None:
        """Merge `params` into the run's params at the top level; a key given again is replaced."""
        with self._write() as session:
            row = _get(session, RunRow, run_id, "run", lock=True)
            row.params = {**row.params, **params}

    def set_tags(self, run_id: str, tags: dict[str, Any]) -> None:
        """Merge `tags` into the run's tags; a key given again is overwritten."""
        with self._write() as session:
            row = _get(session, RunRow, run_id, "run", lock=True)
            row.tags = {**row.tags, **tags}

    def set_system(self, run_id: str, values: dict[str, Any]) -> None:
        """Merge `values` into the run's system state; a key given again is overwritten."""
        with self._write() as session:
            row = _get(session, RunRow, run_id, "run", lock=True)
            row.system = {**row.system, **values}

    def set_data_version(self, run_id: str, data_version_id: str) -> None:
        with self._write() as session:
            _get(session, DataVersionRow, data_version_id, "data version")
            _get(session, RunRow, run_id, "run").data_version_id = data_version_id

    def set_summary_metrics(self, run_id: str, metrics: dict[str, float]) -> None:
        """Set summary values of `metrics`; each wins over the key's logged points, and a key
        given again is overwritten."""
        with self._write() as session:
            _exists(session, run_id)
            sql_metrics.upsert_summary(session, self._insert, run_id, metrics, time.time())

    def end_run(
        self, run_id: str, status: RunStatus, error: str | None = None,
        ended_at: datetime | None = None,
    ) -> Run:
        """Set the run's status, error and end time (now, when `ended_at` is None)."""
        with self._write() as session:
            row = _get(session, RunRow, run_id, "run", lock=True)
            row.status = RunStatus(status).value
            row.error = error
            row.ended_at = as_utc(ended_at) if ended_at is not None else utcnow()
            return to_run(row, sql_metrics.latest_values(session, [run_id])[run_id])

    def reopen_run(self, run_id: str, job: str | None = None) -> Run:
        """Make an ended run RUNNING again (a resume): no end time, no error, heartbeat now;
        with `job`, once per multi-node job (the contract's rules)."""
        with self._write() as session:
            row = _get(session, RunRow, run_id, "run", lock=True)
            if job is not None and row.status == RunStatus.RUNNING.value:
                running_for = (row.system or {}).get("job")
                if running_for != job:
                    raise Conflict(f"run {run_id!r} is running for another job "
                                   f"({running_for or 'a single launcher'}), not {job!r}")
                return to_run(row, sql_metrics.latest_values(session, [run_id])[run_id])
            if job is not None:
                row.system = {**(row.system or {}), "job": job}
            row.status, row.ended_at, row.error = RunStatus.RUNNING.value, None, None
            row.heartbeat_at = utcnow()
            return to_run(row, sql_metrics.latest_values(session, [run_id])[run_id])

    def heartbeat(self, run_id: str, device_hours: float = 0.0) -> None:
        """Set the run's heartbeat to now and add `device_hours` (>= 0) to its total. A run
        marked CRASHED is alive after all: it becomes RUNNING again (no end, no error)."""
        if not device_hours >= 0:
            raise ValueError(f"device_hours must be >= 0, got {device_hours}")
        crashed = RunRow.status == RunStatus.CRASHED.value
        statement = update(RunRow).where(RunRow.run_id == run_id).values(
            heartbeat_at=utcnow(), device_hours=RunRow.device_hours + float(device_hours),
            status=case((crashed, RunStatus.RUNNING.value), else_=RunRow.status),
            ended_at=case((crashed, None), else_=RunRow.ended_at),
            error=case((crashed, None), else_=RunRow.error),
        ).returning(RunRow.run_id).execution_options(synchronize_session=False)
        with self._write() as session:
            if session.execute(statement).first() is None:
                raise NotFound(f"run {run_id!r} not found")

    def mark_crashed(self, heartbeat_before: datetime) -> list[Run]:
        """End as CRASHED every RUNNING run whose last heartbeat (or start) is older than
        `heartbeat_before`, at that last sign of life; return them."""
        cutoff = as_utc(heartbeat_before)
        last_seen = func.coalesce(RunRow.heartbeat_at, RunRow.started_at)
        query = (select(RunRow).where(RunRow.status == RunStatus.RUNNING.value,
                                      last_seen < cutoff)
                 .order_by(RunRow.started_at).with_for_update())
        with self._write() as session:
            rows = list(session.scalars(query))
            for row in rows:
                row.status = RunStatus.CRASHED.value
                row.ended_at = row.heartbeat_at or row.started_at
                row.error = (f"crashed: no heartbeat since {row.ended_at.isoformat()} "
                             f"(checked at {utcnow().isoformat(timespec='seconds')})")
            metrics = sql_metrics.latest_values(session, [row.run_id for row in rows])
            return [to_run(row, metrics[row.run_id]) for row in rows]

    # metric series

    def log_metrics(
        self, run_id: str, points: Sequence[MetricPoint], batch_id: str | None = None
    ) -> bool:
        """Append `points` to the run's series in one bulk insert and move its latest values
        forward, in one transaction. With a `batch_id` already stored for the run, nothing is
        written and False is returned; otherwise True."""
        if not points:
            return True
        with self._write() as session:
            _exists(session, run_id)
            if batch_id is not None and not sql_metrics.claim_batch(
                session, self._insert, run_id, batch_id
            ):
                return False
            sql_metrics.insert_points(session, run_id, points)
            sql_metrics.upsert_latest(session, self._insert, run_id, points)
        return True

    def get_metric_history(
        self,
        run_id: str,
        key: str,
        max_points: int | None = None,
        limit: int = HISTORY_LIMIT,
        cursor: str | None = None,
    ) -> Page[MetricPoint]:
        """The points of series `key`, by step, then timestamp, then insertion order; with
        `max_points` (>= 2), all of a min/max-per-bucket downsampling of at most that many
        points, in one page (`limit` does not apply, and a `cursor` is refused)."""
        if max_points is not None:
            if max_points < 2:
                raise ValueError(f"max_points must be >= 2, got {max_points}")
            if cursor is not None:
                raise ValueError(f"cursor {cursor!r} given with max_points: a downsampled "
                                 "history comes whole, in one page")
        check_limit(limit)
        listing = Listing("get_metric_history", (run_id, key))
        with self._read() as session:
            _exists(session, run_id)
            if max_points is not None:
                return Page(tuple(sql_metrics.downsampled(session, run_id, key, max_points)))
            rows, next_cursor = fetch_page(session, listing, sql_metrics.series(run_id, key),
                                           sql_metrics.SERIES_ORDER, limit, cursor)
            return Page(tuple(sql_metrics.point(key, row) for row in rows), next_cursor)

    def metric_keys(
        self, run_id: str, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[str]:
        """The names of the run's metric series, sorted."""
        query = select().select_from(MetricRow).where(MetricRow.run_id == run_id).distinct()
        keys = (OrderKey(MetricRow.key, (str,)),)
        with self._read() as session:
            _exists(session, run_id)
            rows, next_cursor = fetch_page(session, Listing("metric_keys", (run_id,)), query,
                                           keys, limit, cursor)
            return Page(tuple(row[0] for row in rows), next_cursor)

    def delete_metrics_after(self, run_id: str, step: int) -> int:
        """Rewind the run's series to `step`, the step of the checkpoint it resumes from:
        delete every point above it and set each latest value taken from one of those points to
        the key's last point left (none left: no value); summary values stay. Returns how many
        points were deleted."""
        with self._write() as session:
            _exists(session, run_id)
            return sql_checkpoints.rewind_series(session, run_id, step)

    # checkpoints

    def record_checkpoint(
        self, run_id: str, step: int, uri: str, epoch: int | None = None,
        metrics: dict[str, float] | None = None,
    ) -> CheckpointRecord:
        """Record the checkpoint the run saved at `step`. A step recorded before (a resumed run
        saving it again) is overwritten: new uri, epoch, metrics and creation time, not deleted.
        A metric value of NaN or infinity is read back as NaN."""
        with self._write() as session:
            _exists(session, run_id)
            return sql_checkpoints.upsert_checkpoint(
                session, self._insert, run_id, step, uri, epoch, metrics or {}
            )

    def mark_checkpoint_deleted(self, run_id: str, step: int) -> None:
        """Record that the files of the checkpoint at `step` were deleted, now; a checkpoint
        already marked keeps its first time."""
        with self._write() as session:
            _exists(session, run_id)
            row = session.get(CheckpointRow, (run_id, step), with_for_update=True)
            if row is None:
                raise NotFound(f"run {run_id!r} has no checkpoint at step {step}")
            if row.deleted_at is None:
                row.deleted_at = utcnow()

    def list_checkpoints(
        self,
        run_id: str,
        include_deleted: bool = False,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[CheckpointRecord]:
        """The run's checkpoints by step; those whose files were deleted only with
        `include_deleted`."""
        query = sql_checkpoints.checkpoints(run_id, include_deleted)
        listing = Listing("list_checkpoints", (run_id, include_deleted))
        with self._read() as session:
            _exists(session, run_id)
            rows, next_cursor = fetch_page(session, listing, query, sql_checkpoints.BY_STEP,
                                           limit, cursor)
            return Page(tuple(sql_checkpoints.record(row[0]) for row in rows), next_cursor)

    # data versions

    def put_data_version(self, version: DataVersion) -> DataVersion:
        """Store `version` unless its id is already stored; return the stored record."""
        with self._write() as session:
            stored = session.get(DataVersionRow, version.data_version_id)
            if stored is None:
                created_at = version.created_at or utcnow()
                inserted = session.scalar(self._insert(DataVersionRow).values(
                    data_version_id=version.data_version_id, source=version.source,
                    files=[dict(f) for f in version.files], num_rows=version.num_rows,
                    created_at=created_at).on_conflict_do_nothing()
                    .returning(DataVersionRow.data_version_id))
                if inserted is not None:  # not another writer's meanwhile
                    return dataclasses.replace(version, created_at=created_at)
                stored = _get(session, DataVersionRow, version.data_version_id, "data version")
            return to_data_version(stored)

    def get_data_version(self, data_version_id: str) -> DataVersion:
        with self._read() as session:
            return to_data_version(_get(session, DataVersionRow, data_version_id, "data version"))

    def list_data_versions(
        self, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[DataVersion]:
        """Data versions, newest first."""
        with self._read() as session:
            rows, next_cursor = fetch_page(session, Listing("list_data_versions"),
                                           sql_data_versions.versions(),
                                           sql_data_versions.NEWEST_FIRST, limit, cursor)
            return Page(tuple(to_data_version(row[0]) for row in rows), next_cursor)

    def data_version_ids(self, prefix: str, limit: int = 2) -> list[str]:
        with self._read() as session:
            return sql_data_versions.ids_starting(session, prefix, limit)

    def set_data_tag(self, name: str, tag: str, data_version_id: str) -> DataTag:
        with self._write() as session:
            return sql_data_versions.set_tag(session, self._insert, name, tag, data_version_id)

    def put_data_profile(self, key: str, kind: str, rows: int, profile: bytes) -> None:
        with self._write() as session:
            sql_data_versions.put_profile(session, self._insert, key, kind, rows, profile)

    def get_data_profiles(self, keys: Sequence[str]) -> dict[str, bytes]:
        with self._read() as session:
            return sql_data_versions.get_profiles(session, keys)

    def get_data_tag(self, name: str, tag: str) -> DataTag:
        with self._read() as session:
            return sql_data_versions.get_tag(session, name, tag)

    def list_data_tags(self, data_version_id: str | None = None) -> list[DataTag]:
        with self._read() as session:
            return sql_data_versions.list_tags(session, data_version_id)

    # pipeline runs and step runs

    def create_pipeline_run(self, pipeline_run_id: str, pipeline_id: str,
                            source: dict[str, Any], options: dict[str, Any],
                            run_id: str | None = None) -> PipelineRun:
        with self._write() as session:
            return sql_pipeline_runs.create_run(session, pipeline_run_id, pipeline_id, source,
                                                options, run_id)

    def get_pipeline_run(self, pipeline_run_id: str) -> PipelineRun:
        with self._read() as session:
            return sql_pipeline_runs.get_run(session, pipeline_run_id)

    def find_pipeline_run(self, id_or_prefix: str) -> PipelineRun:
        with self._read() as session:
            return sql_pipeline_runs.find_run(session, id_or_prefix)

    def set_pipeline_run_status(self, pipeline_run_id: str,
                                status: PipelineRunStatus) -> PipelineRun:
        with self._write() as session:
            return sql_pipeline_runs.set_status(session, pipeline_run_id, status)

    def add_step_run(self, pipeline_run_id: str, step: str, attempt: int, state: StepState,
                     started_at: datetime | None = None) -> StepRun:
        with self._write() as session:
            return sql_pipeline_runs.add_step(session, pipeline_run_id, step, attempt, state,
                                              started_at)

    def update_step_run(
        self, step_run_id: int, state: StepState, *, started_at: datetime | None = None,
        ended_at: datetime | None = None, error: str | None = None,
        cache_key: str | None = None, cache_parts: dict[str, Any] | None = None,
        outputs: dict[str, Any] | None = None, cached_from: int | None = None,
    ) -> None:
        changes = {"started_at": started_at, "ended_at": ended_at, "error": error,
                   "cache_key": cache_key, "cache_parts": cache_parts, "outputs": outputs,
                   "cached_from": cached_from}
        with self._write() as session:
            sql_pipeline_runs.update_step(session, step_run_id, state, changes)

    def list_step_runs(self, pipeline_run_id: str) -> list[StepRun]:
        with self._read() as session:
            return sql_pipeline_runs.list_steps(session, pipeline_run_id)

    def find_cached(self, cache_key: str, newer_than: datetime | None = None) -> StepRun | None:
        with self._read() as session:
            return sql_pipeline_runs.find_cached(session, cache_key, newer_than)

    def previous_step_run(self, pipeline_id: str, step: str, before: int) -> StepRun | None:
        with self._read() as session:
            return sql_pipeline_runs.previous_step(session, pipeline_id, step, before)

    def list_step_outputs(self) -> list[StepOutputs]:
        with self._read() as session:
            return sql_pipeline_runs.step_outputs(session)

    # model registry

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
    ) -> ModelVersion:
        """Register the next version ("1", "2", ...) of `model_name`, made by run `run_id`,
        with its first history entry."""
        for _ in range(_VERSION_ATTEMPTS):
            row = ModelVersionRow(
                model_name=model_name, run_id=run_id, stage=ModelStage(stage).value,
                artifact_uri=artifact_uri, metrics=metrics_json(metrics),
                data_version_id=data_version_id, git_commit=git_commit,
                features_hash=features_hash, environment=dict(environment or {}),
                created_at=utcnow(),
            )
            try:
                with self._write() as session:
                    _get(session, RunRow, run_id, "run")
                    row.version = str(_last_version(session, model_name) + 1)
                    session.add(row)
                    session.flush()
                    sql_registry.record_registration(session, row)
            except IntegrityError:
                continue  # another registration took this number first
            return to_model_version(row)
        raise Conflict(f"model {model_name!r}: no free version after {_VERSION_ATTEMPTS} tries")

    def get_model_version(self, model_name: str, version: str) -> ModelVersion:
        with self._read() as session:
            row = session.get(ModelVersionRow, (model_name, str(version)))
            if row is None:
                raise NotFound(f"model {model_name!r} version {str(version)!r} not found")
            return to_model_version(row)

    def list_model_versions(
        self, model_name: str | None = None, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[ModelVersion]:
        """Versions of one model (or of all), by model name then version number."""
        query = select(ModelVersionRow)
        if model_name is not None:
            query = query.where(ModelVersionRow.model_name == model_name)
        listing = Listing("list_model_versions", (model_name,))
        with self._read() as session:
            rows, next_cursor = fetch_page(session, listing, query, _BY_MODEL_AND_NUMBER, limit,
                                           cursor)
            return Page(tuple(to_model_version(row[0]) for row in rows), next_cursor)

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
    ) -> StageChange:
        """Move the version to `to` under its model's lock, archiving the stage's holder
        (see `sql_registry`); `Conflict` when another change came first."""
        try:
            with self._write() as session:
                return sql_registry.change_stage(
                    session, model_name, str(version), ModelStage(to),
                    expected_from=ModelStage(expected_from), expected_holder=expected_holder,
                    user=user, reason=reason, forced=forced, gate_report=gate_report)
        except IntegrityError as exc:
            raise Conflict(f"model {model_name!r}: {ModelStage(to).value} was taken by another "
                           "change meanwhile; promote again") from exc

    def record_refusal(
        self, model_name: str, version: str, to: ModelStage, *, user: str, reason: str,
        gate_report: Sequence[dict[str, Any]],
    ) -> StageChange:
        with self._write() as session:
            return sql_registry.record_refusal(session, model_name, str(version),
                                               ModelStage(to), user=user, reason=reason,
                                               gate_report=gate_report)

    def get_stage_holder(self, model_name: str, stage: ModelStage) -> ModelVersion | None:
        with self._read() as session:
            return sql_registry.stage_holder(session, model_name, ModelStage(stage))

    def list_stage_changes(
        self, model_name: str, version: str | None = None, limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[StageChange]:
        """The model's stage history (of one version, when given), oldest first."""
        listing = Listing("list_stage_changes", (model_name, version))
        with self._read() as session:
            rows, next_cursor = fetch_page(session, listing,
                                           sql_registry.stage_changes(model_name, version),
                                           sql_registry.BY_ID, limit, cursor)
            return Page(tuple(to_stage_change(row[0]) for row in rows), next_cursor)

    def set_alias(self, model_name: str, alias: str, version: str) -> None:
        with self._write() as session:
            sql_registry.set_alias(session, model_name, alias, str(version))

    def get_alias(self, model_name: str, alias: str) -> ModelVersion:
        with self._read() as session:
            return sql_registry.aliased(session, model_name, alias)

    def list_aliases(self, model_name: str) -> dict[str, str]:
        with self._read() as session:
            return sql_registry.aliases(session, model_name)

    # webhooks

    def add_webhook(self, url: str, events: Sequence[str], secret_env: str) -> Webhook:
        with self._write() as session:
            return sql_registry.add_webhook(session, url, events, secret_env)

    def list_webhooks(
        self, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[Webhook]:
        with self._read() as session:
            rows, next_cursor = fetch_page(session, Listing("list_webhooks"),
                                           sql_registry.webhooks(), sql_registry.BY_WEBHOOK_ID,
                                           limit, cursor)
            return Page(tuple(to_webhook(row[0]) for row in rows), next_cursor)

    def record_delivery(
        self, webhook_id: int, event_id: str, event: str, attempt: int,
        status_code: int | None, error: str | None, delivered: bool,
    ) -> WebhookDelivery:
        with self._write() as session:
            return sql_registry.record_delivery(session, webhook_id, event_id, event, attempt,
                                                status_code, error, delivered)

    def list_deliveries(
        self, webhook_id: int | None = None, limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> Page[WebhookDelivery]:
        """Delivery attempts newest first (of one webhook, when given)."""
        listing = Listing("list_deliveries", (webhook_id,))
        with self._read() as session:
            rows, next_cursor = fetch_page(session, listing, sql_registry.deliveries(webhook_id),
                                           sql_registry.NEWEST_DELIVERY_FIRST, limit, cursor)
            return Page(tuple(to_delivery(row[0]) for row in rows), next_cursor)


def _backend(url: str) -> str:
    """The backend name of `url`, or `StoreError` saying which URLs are accepted."""
    expected = "expected sqlite:///<file> or postgresql+psycopg://<user>@<host>/<db>"
    try:
        backend = make_url(url).get_backend_name()
    except (ArgumentError, ValueError):
        # not chained: SQLAlchemy's message may quote the URL, password and all
        raise StoreError(f"malformed database URL {shown_url(url)!r}: {expected}") from None
    if backend not in _BACKENDS:
        shown = make_url(url).render_as_string(hide_password=True)
        raise StoreError(f"unsupported database URL {shown!r}: {expected}")
    return backend


@contextmanager
def _translated(store: SqlStore) -> Iterator[None]:
    """Connection-level failures (refused, lost, lock wait timed out) as `StoreUnavailable`."""
    try:
        yield
    except (OperationalError, InterfaceError) as exc:
        raise StoreUnavailable(f"{store!r} unavailable: {exc.orig or exc}") from exc


def _ambiguous(prefix: str, candidates: list[str], count: int) -> Ambiguous:
    more = f", and {count - len(candidates)} more" if count > len(candidates) else ""
    return Ambiguous(f"run id {prefix!r} is ambiguous: {count} runs start with it "
                     f"({', '.join(candidates)}{more}); give more of the id", candidates)


def _exists(session: Session, run_id: str) -> None:
    """`NotFound` unless the run exists (reads the key only, not the run's JSON)."""
    if session.scalar(select(RunRow.run_id).where(RunRow.run_id == run_id)) is None:
        raise NotFound(f"run {run_id!r} not found")


def _runs_in_order(session: Session, run_ids: list[str]) -> list[Run]:
    """The runs of `run_ids`, in that order, with their latest metrics (two queries)."""
    rows = {row.run_id: row for row in
            session.scalars(select(RunRow).where(RunRow.run_id.in_(run_ids)))}
    metrics = sql_metrics.latest_values(session, run_ids)
    return [to_run(rows[run_id], metrics[run_id]) for run_id in run_ids]


def _get(
    session: Session, row_type: type[RowT], key: str, what: str, lock: bool = False
) -> RowT:
    """The row of `row_type` with primary key `key`, or `NotFound` naming `what`."""
    row = session.get(row_type, key, with_for_update=lock)
    if row is None:
        raise NotFound(f"{what} {key!r} not found")
    return row


def _last_version(session: Session, model_name: str) -> int:
    query = select(func.max(cast(ModelVersionRow.version, Integer))).where(
        ModelVersionRow.model_name == model_name
    )
    return session.scalar(query) or 0
