"""`SqlStore`: the one SQL implementation of `trainforge.storage.Store`, over SQLAlchemy.

The URL picks the backend: `sqlite:///path/to/file.db` or `postgresql+psycopg://user@host/db`
(`open_store(url)` chooses this class for both). The rules of `storage/contracts/` hold;
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
- each area's methods live beside its statements, one class per area over `SqlBase`
  (`sql_base`: engine, sessions, failures as `StoreUnavailable`): metrics, checkpoints, data
  versions, pipeline runs, the registry (a stage change locks its model's version rows and
  checks the state it was decided on, so of concurrent changes one wins and the others raise
  `Conflict`), the outbox, and users and API tokens (`sql_auth`); this module holds
  experiments, pipelines and runs;
- a metric value of NaN is stored as NULL; in a checkpoint's metrics, NaN and infinities are
  stored as JSON null, as in a model version's;
- pages are keyset queries (`sql_pages`): each fetches one row more than it returns, and its
  cursor (`cursors`) holds the last row's sort key.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import case, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from trainforge.entities import Experiment, Pipeline, Run, RunStatus
from trainforge.errors import Ambiguous, Conflict, NotFound
from trainforge.storage import sql_metrics
from trainforge.storage.contracts import DEFAULT_LIMIT, Page
from trainforge.storage.cursors import Listing
from trainforge.storage.query import parse_filter, parse_sort
from trainforge.storage.records import to_experiment, to_pipeline, to_run
from trainforge.storage.sql_auth import SqlAuthStore
from trainforge.storage.sql_base import get_row, new_id, require_run
from trainforge.storage.sql_checkpoints import SqlCheckpointStore
from trainforge.storage.sql_data_versions import SqlDataVersionStore
from trainforge.storage.sql_metrics import SqlMetricStore
from trainforge.storage.sql_outbox import SqlOutbox
from trainforge.storage.sql_pages import OrderKey, fetch_page
from trainforge.storage.sql_pipeline_runs import SqlPipelineRunStore
from trainforge.storage.sql_registry import SqlRegistryStore
from trainforge.storage.sql_search import newest_first, search_query
from trainforge.storage.tables import (
    DataVersionRow,
    ExperimentRow,
    PipelineRow,
    RunRow,
    as_utc,
    utcnow,
)

_SPEC_HASH_LENGTH = 64  # the width of `runs.spec_hash`
_CANDIDATES_SHOWN = 5  # run ids an `Ambiguous` error lists
_BY_NAME = (OrderKey(ExperimentRow.name, (str,)),)
_BY_PIPELINE_ID = (OrderKey(PipelineRow.pipeline_id, (str,)),)


class SqlStore(SqlMetricStore, SqlCheckpointStore, SqlDataVersionStore, SqlPipelineRunStore,
               SqlRegistryStore, SqlOutbox, SqlAuthStore):
    """The store on SQLite or PostgreSQL; safe to share between threads. This class holds the
    experiments, pipelines and runs; each other area's methods come from its own class (see
    `sql_base`), all over one `SqlBase`."""

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
            return to_experiment(get_row(session, ExperimentRow, experiment_id, "experiment"))

    def list_experiments(
        self, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[Experiment]:
        """Experiments by name."""
        with self._read() as session:
            rows, next_cursor = fetch_page(session, Listing("list_experiments"),
                                           select(ExperimentRow), _BY_NAME, limit, cursor)
            return Page(tuple(to_experiment(row[0]) for row in rows), next_cursor)

    def upsert_pipeline(self, pipeline: Pipeline) -> Pipeline:
        """Insert `pipeline`, or replace the stored one with the same id (keeping created_at);
        a registered pipeline is kept as it was registered."""
        fields = {"name": pipeline.name, "dag_config": pipeline.dag_config,
                  "schedule": pipeline.schedule, "created_by": pipeline.created_by}
        statement = self._insert(PipelineRow).values(
            pipeline_id=pipeline.pipeline_id, created_at=utcnow(), **fields
        ).on_conflict_do_update(index_elements=["pipeline_id"], set_=fields,
                                where=PipelineRow.registered_at.is_(None))
        with self._write() as session:
            session.execute(statement)
            return to_pipeline(get_row(session, PipelineRow, pipeline.pipeline_id, "pipeline"))

    def register_pipeline(self, pipeline: Pipeline, replace: bool = False) -> Pipeline:
        """Register `pipeline` (its `spec` given); see the contract."""
        if pipeline.spec is None:
            raise ValueError(f"pipeline {pipeline.pipeline_id!r}: a registered pipeline needs "
                             "its spec")
        with self._write() as session:
            session.execute(self._insert(PipelineRow).values(
                pipeline_id=pipeline.pipeline_id, name=pipeline.name, dag_config={},
                created_at=utcnow()).on_conflict_do_nothing(index_elements=["pipeline_id"]))
            row = get_row(session, PipelineRow, pipeline.pipeline_id, "pipeline", lock=True)
            same = (row.name, row.dag_config, row.spec) == (pipeline.name, pipeline.dag_config,
                                                           pipeline.spec)
            if row.registered_at is not None and not same and not replace:
                raise Conflict(f"pipeline {pipeline.pipeline_id!r} is registered with another "
                               f"spec (by {row.created_by or 'someone'} at "
                               f"{as_utc(row.registered_at):%Y-%m-%d %H:%M} UTC): register "
                               "this one under a new id, or replace it")
            if row.registered_at is None or not same:
                row.name, row.dag_config, row.spec = (pipeline.name, pipeline.dag_config,
                                                      pipeline.spec)
                row.schedule, row.created_by = pipeline.schedule, pipeline.created_by
                row.registered_at = utcnow()
            session.flush()
            return to_pipeline(row)

    def get_pipeline(self, pipeline_id: str) -> Pipeline:
        with self._read() as session:
            return to_pipeline(get_row(session, PipelineRow, pipeline_id, "pipeline"))

    def list_pipelines(self, registered: bool | None = None, limit: int = DEFAULT_LIMIT,
                       cursor: str | None = None) -> Page[Pipeline]:
        """Pipelines by id: all of them, or only the registered ones (True) or only those
        their runs recorded (False)."""
        query = select(PipelineRow)
        if registered is not None:
            query = query.where(PipelineRow.registered_at.is_not(None) if registered
                                else PipelineRow.registered_at.is_(None))
        with self._read() as session:
            rows, next_cursor = fetch_page(session, Listing("list_pipelines", (registered,)),
                                           query, _BY_PIPELINE_ID, limit, cursor)
            return Page(tuple(to_pipeline(row[0]) for row in rows), next_cursor)

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
                get_row(session, ExperimentRow, experiment_id, "experiment")
                if pipeline_id is not None:
                    get_row(session, PipelineRow, pipeline_id, "pipeline")
                if parent_run_id is not None:
                    get_row(session, RunRow, parent_run_id, "parent run")
                if session.get(RunRow, row.run_id) is not None:
                    raise Conflict(f"run {row.run_id!r} already exists")
                session.add(row)
        except IntegrityError as exc:
            raise Conflict(f"run {row.run_id!r} already exists") from exc
        return to_run(row, {})

    def get_run(self, run_id: str) -> Run:
        with self._read() as session:
            row = get_row(session, RunRow, run_id, "run")
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
                row = get_row(session, RunRow, found[0], "run")
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
            row = get_row(session, RunRow, run_id, "run", lock=True)
            row.params = {**row.params, **params}

    def set_tags(self, run_id: str, tags: dict[str, Any]) -> None:
        """Merge `tags` into the run's tags; a key given again is overwritten."""
        with self._write() as session:
            row = get_row(session, RunRow, run_id, "run", lock=True)
            row.tags = {**row.tags, **tags}

    def set_system(self, run_id: str, values: dict[str, Any]) -> None:
        """Merge `values` into the run's system state; a key given again is overwritten."""
        with self._write() as session:
            row = get_row(session, RunRow, run_id, "run", lock=True)
            row.system = {**row.system, **values}

    def set_data_version(self, run_id: str, data_version_id: str) -> None:
        with self._write() as session:
            get_row(session, DataVersionRow, data_version_id, "data version")
            get_row(session, RunRow, run_id, "run").data_version_id = data_version_id

    def set_summary_metrics(self, run_id: str, metrics: dict[str, float]) -> None:
        """Set summary values of `metrics`; each wins over the key's logged points, and a key
        given again is overwritten."""
        with self._write() as session:
            require_run(session, run_id)
            sql_metrics.upsert_summary(session, self._insert, run_id, metrics, time.time())

    def end_run(
        self, run_id: str, status: RunStatus, error: str | None = None,
        ended_at: datetime | None = None,
    ) -> Run:
        """Set the run's status, error and end time (now, when `ended_at` is None)."""
        with self._write() as session:
            row = get_row(session, RunRow, run_id, "run", lock=True)
            row.status = RunStatus(status).value
            row.error = error
            row.ended_at = as_utc(ended_at) if ended_at is not None else utcnow()
            return to_run(row, sql_metrics.latest_values(session, [run_id])[run_id])

    def reopen_run(self, run_id: str, job: str | None = None) -> Run:
        """Make an ended run RUNNING again (a resume): no end time, no error, heartbeat now;
        with `job`, once per multi-node job (the contract's rules)."""
        with self._write() as session:
            row = get_row(session, RunRow, run_id, "run", lock=True)
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

def _ambiguous(prefix: str, candidates: list[str], count: int) -> Ambiguous:
    more = f", and {count - len(candidates)} more" if count > len(candidates) else ""
    return Ambiguous(f"run id {prefix!r} is ambiguous: {count} runs start with it "
                     f"({', '.join(candidates)}{more}); give more of the id", candidates)


def _runs_in_order(session: Session, run_ids: list[str]) -> list[Run]:
    """The runs of `run_ids`, in that order, with their latest metrics (two queries)."""
    rows = {row.run_id: row for row in
            session.scalars(select(RunRow).where(RunRow.run_id.in_(run_ids)))}
    metrics = sql_metrics.latest_values(session, run_ids)
    return [to_run(rows[run_id], metrics[run_id]) for run_id in run_ids]
