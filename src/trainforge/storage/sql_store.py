"""`SqlStore`: the one implementation of `trainforge.tracking.TrackingStore`, over SQLAlchemy.

The URL picks the backend: `sqlite:///path/to/file.db` or `postgresql+psycopg://user@host/db`.
Rules, beyond the contract's:
- the schema is migrated to the newest revision when the store is opened;
- every public method is one transaction; writes on SQLite take the write lock when they begin,
  so read-modify-write methods (`set_tags`, `set_summary_metrics`) never lose an update, and on
  PostgreSQL they lock the run row;
- ids are uuid4 hex; model versions are "1", "2", ... per model name, and concurrent
  registrations of one model get distinct numbers;
- `get_or_create_experiment`, `upsert_pipeline` and `put_data_version` are race-free upserts;
  a data version is content-addressed, so putting an existing id returns the stored record;
- a metric value of NaN is stored as NULL and read back as NaN;
- every datetime handed out is timezone-aware UTC.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Integer, cast, func, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from trainforge.entities import (
    DataVersion,
    Experiment,
    MetricPoint,
    ModelStage,
    ModelVersion,
    Pipeline,
    Run,
    RunStatus,
)
from trainforge.errors import Conflict, NotFound, StoreError
from trainforge.storage.db import WRITE, default_db_url, make_engine, migrate
from trainforge.storage.tables import (
    Base,
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
RowT = TypeVar("RowT", bound=Base)


def new_id() -> str:
    """A fresh id: uuid4 as 32 hex characters."""
    return uuid.uuid4().hex


def open_store(url: str | None = None) -> SqlStore:
    """Open (and migrate) the store at `url`; None means `default_db_url()`.

    Example: `open_store("sqlite:///runs.db").get_or_create_experiment("mnist")`.
    """
    return SqlStore(url or default_db_url())


class SqlStore:
    """The tracking store on SQLite or PostgreSQL; safe to share between threads."""

    def __init__(self, url: str) -> None:
        backend = _backend(url)
        self.url = url
        self._engine = make_engine(url)
        self._insert = _BACKENDS[backend]
        migrate(self._engine)
        self._reader = sessionmaker(self._engine, expire_on_commit=False)
        writer = self._engine.execution_options(**{WRITE: True})
        self._writer = sessionmaker(writer, expire_on_commit=False)

    def __repr__(self) -> str:
        return f"SqlStore({make_url(self.url).render_as_string(hide_password=True)!r})"

    def close(self) -> None:
        """Close every pooled connection; the store can still be used afterwards."""
        self._engine.dispose()

    @contextmanager
    def _read(self) -> Iterator[Session]:
        with self._reader() as session:
            yield session

    @contextmanager
    def _write(self) -> Iterator[Session]:
        with self._writer.begin() as session:
            yield session

    # experiments and pipelines

    def get_or_create_experiment(self, name: str, description: str = "") -> Experiment:
        """The experiment called `name`, created with `description` if there is none yet."""
        row = {"experiment_id": new_id(), "name": name, "description": description,
               "owner": "", "created_at": utcnow()}
        with self._write() as session:
            session.execute(self._insert(ExperimentRow).values(row).on_conflict_do_nothing())
            found = session.scalars(select(ExperimentRow).where(ExperimentRow.name == name)).one()
            return _experiment(found)

    def get_experiment(self, experiment_id: str) -> Experiment:
        with self._read() as session:
            return _experiment(_get(session, ExperimentRow, experiment_id, "experiment"))

    def list_experiments(self) -> list[Experiment]:
        """Every experiment, by name."""
        with self._read() as session:
            rows = session.scalars(select(ExperimentRow).order_by(ExperimentRow.name))
            return [_experiment(row) for row in rows]

    def upsert_pipeline(self, pipeline: Pipeline) -> Pipeline:
        """Insert `pipeline`, or replace the stored one with the same id (keeping created_at)."""
        fields = {"name": pipeline.name, "dag_config": pipeline.dag_config,
                  "schedule": pipeline.schedule, "created_by": pipeline.created_by}
        statement = self._insert(PipelineRow).values(
            pipeline_id=pipeline.pipeline_id, created_at=utcnow(), **fields
        ).on_conflict_do_update(index_elements=["pipeline_id"], set_=fields)
        with self._write() as session:
            session.execute(statement)
            return _pipeline(_get(session, PipelineRow, pipeline.pipeline_id, "pipeline"))

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
    ) -> Run:
        """A new RUNNING run; `Conflict` if `run_id` is taken, `NotFound` for a missing parent."""
        row = RunRow(
            run_id=run_id or new_id(), experiment_id=experiment_id, pipeline_id=pipeline_id,
            status=RunStatus.RUNNING.value, params=params, metrics={}, tags={},
            environment=environment, artifact_uri=artifact_uri, started_at=utcnow(),
            git_commit=git_commit, git_dirty=git_dirty,
        )
        try:
            with self._write() as session:
                _get(session, ExperimentRow, experiment_id, "experiment")
                if pipeline_id is not None:
                    _get(session, PipelineRow, pipeline_id, "pipeline")
                if session.get(RunRow, row.run_id) is not None:
                    raise Conflict(f"run {row.run_id!r} already exists")
                session.add(row)
        except IntegrityError as exc:
            raise Conflict(f"run {row.run_id!r} already exists") from exc
        return _run(row)

    def get_run(self, run_id: str) -> Run:
        with self._read() as session:
            return _run(_get(session, RunRow, run_id, "run"))

    def list_runs(
        self, experiment_id: str | None = None, status: RunStatus | None = None, limit: int = 100
    ) -> list[Run]:
        """At most `limit` runs, newest `started_at` first, optionally of one experiment/status."""
        query = select(RunRow).order_by(RunRow.started_at.desc(), RunRow.run_id).limit(limit)
        if experiment_id is not None:
            query = query.where(RunRow.experiment_id == experiment_id)
        if status is not None:
            query = query.where(RunRow.status == RunStatus(status).value)
        with self._read() as session:
            return [_run(row) for row in session.scalars(query)]

    def set_tags(self, run_id: str, tags: dict[str, Any]) -> None:
        """Merge `tags` into the run's tags; a key given again is overwritten."""
        with self._write() as session:
            row = _get(session, RunRow, run_id, "run", lock=True)
            row.tags = {**row.tags, **tags}

    def set_data_version(self, run_id: str, data_version_id: str) -> None:
        with self._write() as session:
            _get(session, DataVersionRow, data_version_id, "data version")
            _get(session, RunRow, run_id, "run").data_version_id = data_version_id

    def set_summary_metrics(self, run_id: str, metrics: dict[str, float]) -> None:
        """Merge `metrics` into the run's summary metrics; a key given again is overwritten."""
        with self._write() as session:
            row = _get(session, RunRow, run_id, "run", lock=True)
            row.metrics = {**row.metrics, **_metrics_json(metrics)}

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
            return _run(row)

    # metric series

    def log_metrics(self, run_id: str, points: Sequence[MetricPoint]) -> None:
        """Append `points` to the run's series in one bulk insert."""
        if not points:
            return
        rows = [
            {"run_id": run_id, "key": p.key, "step": int(p.step), "timestamp": float(p.timestamp),
             "value": None if math.isnan(p.value) else float(p.value)}
            for p in points
        ]
        with self._write() as session:
            _get(session, RunRow, run_id, "run")
            session.execute(insert(MetricRow), rows)

    def get_metric_history(self, run_id: str, key: str) -> list[MetricPoint]:
        """Every point of series `key`, by step, then timestamp, then insertion order."""
        query = (
            select(MetricRow.key, MetricRow.value, MetricRow.step, MetricRow.timestamp)
            .where(MetricRow.run_id == run_id, MetricRow.key == key)
            .order_by(MetricRow.step, MetricRow.timestamp, MetricRow.id)
        )
        with self._read() as session:
            _get(session, RunRow, run_id, "run")
            return [
                MetricPoint(key=k, value=math.nan if v is None else v, step=s, timestamp=t)
                for k, v, s, t in session.execute(query)
            ]

    def metric_keys(self, run_id: str) -> list[str]:
        """The names of the run's metric series, sorted."""
        query = select(MetricRow.key).where(MetricRow.run_id == run_id).distinct()
        with self._read() as session:
            _get(session, RunRow, run_id, "run")
            return sorted(session.scalars(query))

    # data versions

    def put_data_version(self, version: DataVersion) -> DataVersion:
        """Store `version` unless its id is already stored; return the stored record."""
        row = {"data_version_id": version.data_version_id, "source": version.source,
               "files": [dict(f) for f in version.files], "num_rows": version.num_rows,
               "created_at": version.created_at or utcnow()}
        with self._write() as session:
            session.execute(self._insert(DataVersionRow).values(row).on_conflict_do_nothing())
            stored = _get(session, DataVersionRow, version.data_version_id, "data version")
            return _data_version(stored)

    def get_data_version(self, data_version_id: str) -> DataVersion:
        with self._read() as session:
            return _data_version(_get(session, DataVersionRow, data_version_id, "data version"))

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
    ) -> ModelVersion:
        """Register the next version ("1", "2", ...) of `model_name`, made by run `run_id`."""
        for _ in range(_VERSION_ATTEMPTS):
            row = ModelVersionRow(
                model_name=model_name, run_id=run_id, stage=ModelStage(stage).value,
                artifact_uri=artifact_uri, metrics=_metrics_json(metrics),
                data_version_id=data_version_id, git_commit=git_commit, created_at=utcnow(),
            )
            try:
                with self._write() as session:
                    _get(session, RunRow, run_id, "run")
                    row.version = str(_last_version(session, model_name) + 1)
                    session.add(row)
            except IntegrityError:
                continue  # another registration took this number first
            return _model_version(row)
        raise Conflict(f"model {model_name!r}: no free version after {_VERSION_ATTEMPTS} tries")

    def get_model_version(self, model_name: str, version: str) -> ModelVersion:
        with self._read() as session:
            row = session.get(ModelVersionRow, (model_name, str(version)))
            if row is None:
                raise NotFound(f"model {model_name!r} version {str(version)!r} not found")
            return _model_version(row)

    def list_model_versions(self, model_name: str | None = None) -> list[ModelVersion]:
        """Versions of one model (or of all), by model name then version number."""
        query = select(ModelVersionRow).order_by(
            ModelVersionRow.model_name, cast(ModelVersionRow.version, Integer)
        )
        if model_name is not None:
            query = query.where(ModelVersionRow.model_name == model_name)
        with self._read() as session:
            return [_model_version(row) for row in session.scalars(query)]


def _backend(url: str) -> str:
    """The backend name of `url`, or `StoreError` saying which URLs are accepted."""
    expected = "expected sqlite:///<file> or postgresql+psycopg://<user>@<host>/<db>"
    try:
        backend = make_url(url).get_backend_name()
    except ArgumentError as exc:
        raise StoreError(f"malformed database URL {url!r}: {expected}") from exc
    if backend not in _BACKENDS:
        shown = make_url(url).render_as_string(hide_password=True)
        raise StoreError(f"unsupported database URL {shown!r}: {expected}")
    return backend


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


def _experiment(row: ExperimentRow) -> Experiment:
    return Experiment(experiment_id=row.experiment_id, name=row.name,
                      description=row.description, owner=row.owner)


def _metrics_json(metrics: dict[str, float]) -> dict[str, float | None]:
    """JSON has no NaN or infinity (PostgreSQL's JSONB refuses them): store those as null."""
    return {k: float(v) if math.isfinite(v) else None for k, v in metrics.items()}


def _metrics_from_json(stored: dict[str, float | None]) -> dict[str, float]:
    return {k: float("nan") if v is None else float(v) for k, v in stored.items()}


def _pipeline(row: PipelineRow) -> Pipeline:
    return Pipeline(pipeline_id=row.pipeline_id, name=row.name, dag_config=dict(row.dag_config),
                    schedule=row.schedule, created_by=row.created_by)


def _run(row: RunRow) -> Run:
    return Run(
        run_id=row.run_id, experiment_id=row.experiment_id, status=RunStatus(row.status),
        params=dict(row.params), metrics=_metrics_from_json(row.metrics), tags=dict(row.tags),
        environment=dict(row.environment), artifact_uri=row.artifact_uri,
        started_at=as_utc(row.started_at),
        ended_at=None if row.ended_at is None else as_utc(row.ended_at),
        git_commit=row.git_commit, git_dirty=row.git_dirty,
        data_version_id=row.data_version_id, error=row.error, pipeline_id=row.pipeline_id,
    )


def _data_version(row: DataVersionRow) -> DataVersion:
    return DataVersion(data_version_id=row.data_version_id, source=row.source,
                       files=tuple(dict(f) for f in row.files), num_rows=row.num_rows,
                       created_at=as_utc(row.created_at))


def _model_version(row: ModelVersionRow) -> ModelVersion:
    return ModelVersion(
        model_name=row.model_name, version=row.version, run_id=row.run_id,
        stage=ModelStage(row.stage), artifact_uri=row.artifact_uri,
        created_at=as_utc(row.created_at), metrics=_metrics_from_json(row.metrics),
        data_version_id=row.data_version_id, git_commit=row.git_commit,
    )
