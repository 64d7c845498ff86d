"""Pipeline run and step run statements of the SQL store: the runner's persisted states, the
cache lookup and what `explain-cache` compares. Each function runs inside the caller's
session."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from trainforge.entities import PipelineRun, PipelineRunStatus, StepRun, StepState
from trainforge.errors import Ambiguous, Conflict, NotFound
from trainforge.storage.contracts import DEFAULT_LIMIT, Page, StepOutputs
from trainforge.storage.cursors import Listing
from trainforge.storage.sql_base import SqlBase
from trainforge.storage.sql_pages import OrderKey, fetch_page
from trainforge.storage.tables import PipelineRow, PipelineRunRow, StepRunRow, as_utc, utcnow

_SHOWN = 5  # ids an ambiguous prefix lists
NEWEST_FIRST = (OrderKey(PipelineRunRow.started_at, (datetime,), descending=True),
                OrderKey(PipelineRunRow.pipeline_run_id, (str,), descending=True))
_UPDATABLE = ("started_at", "ended_at", "error", "cache_key", "cache_parts", "outputs",
              "cached_from")


def create_run(session: Session, pipeline_run_id: str, pipeline_id: str, source: dict[str, Any],
               options: dict[str, Any], run_id: str | None) -> PipelineRun:
    if session.get(PipelineRow, pipeline_id) is None:
        raise NotFound(f"pipeline {pipeline_id!r} not found")
    if session.get(PipelineRunRow, pipeline_run_id) is not None:
        raise Conflict(f"pipeline run {pipeline_run_id!r} exists already")
    row = PipelineRunRow(pipeline_run_id=pipeline_run_id, pipeline_id=pipeline_id,
                         status=PipelineRunStatus.RUNNING.value, source=source,
                         options=options, run_id=run_id, started_at=utcnow())
    session.add(row)
    try:
        session.flush()
    except IntegrityError as exc:
        raise Conflict(f"pipeline run {pipeline_run_id!r} exists already") from exc
    return to_pipeline_run(row)


def get_run(session: Session, pipeline_run_id: str) -> PipelineRun:
    row = session.get(PipelineRunRow, pipeline_run_id)
    if row is None:
        raise NotFound(f"pipeline run {pipeline_run_id!r} not found")
    return to_pipeline_run(row)


def find_run(session: Session, id_or_prefix: str) -> PipelineRun:
    if not id_or_prefix:
        raise ValueError("a pipeline run id or prefix must not be empty")
    row = session.get(PipelineRunRow, id_or_prefix)
    if row is not None:
        return to_pipeline_run(row)
    starts = func.substr(PipelineRunRow.pipeline_run_id, 1, len(id_or_prefix)) == id_or_prefix
    found = list(session.scalars(select(PipelineRunRow.pipeline_run_id).where(starts)
                                 .order_by(PipelineRunRow.pipeline_run_id).limit(_SHOWN + 1)))
    if not found:
        raise NotFound(f"pipeline run {id_or_prefix!r} not found")
    if len(found) > 1:
        raise Ambiguous(f"pipeline run id {id_or_prefix!r} is ambiguous: it starts "
                        f"{', '.join(found[:_SHOWN])}{', ...' if len(found) > _SHOWN else ''}; "
                        "give more of the id", found[:_SHOWN])
    return get_run(session, found[0])


def list_runs(session: Session, pipeline_id: str | None, status: PipelineRunStatus | None,
              limit: int, cursor: str | None) -> Page[PipelineRun]:
    state = None if status is None else PipelineRunStatus(status).value
    query = select(PipelineRunRow)
    if pipeline_id is not None:
        query = query.where(PipelineRunRow.pipeline_id == pipeline_id)
    if state is not None:
        query = query.where(PipelineRunRow.status == state)
    listing = Listing("list_pipeline_runs", (pipeline_id, state))
    rows, next_cursor = fetch_page(session, listing, query, NEWEST_FIRST, limit, cursor)
    return Page(tuple(to_pipeline_run(row[0]) for row in rows), next_cursor)


def set_status(session: Session, pipeline_run_id: str,
               status: PipelineRunStatus) -> PipelineRun:
    row = session.get(PipelineRunRow, pipeline_run_id, with_for_update=True)
    if row is None:
        raise NotFound(f"pipeline run {pipeline_run_id!r} not found")
    row.status = status.value
    row.ended_at = None if status is PipelineRunStatus.RUNNING else utcnow()
    session.flush()
    return to_pipeline_run(row)


def add_step(session: Session, pipeline_run_id: str, step: str, attempt: int, state: StepState,
             started_at: datetime | None) -> StepRun:
    if session.get(PipelineRunRow, pipeline_run_id) is None:
        raise NotFound(f"pipeline run {pipeline_run_id!r} not found")
    row = StepRunRow(pipeline_run_id=pipeline_run_id, step=step, attempt=attempt,
                     state=state.value, started_at=started_at, cache_parts={}, outputs={})
    session.add(row)
    session.flush()
    return to_step_run(row)


def update_step(session: Session, step_run_id: int, state: StepState,
                changes: dict[str, Any]) -> None:
    unknown = set(changes) - set(_UPDATABLE)
    if unknown:
        raise ValueError(f"step run fields {sorted(unknown)} cannot be updated")
    row = session.get(StepRunRow, step_run_id)
    if row is None:
        raise NotFound(f"step run {step_run_id} not found")
    row.state = state.value
    for name, value in changes.items():
        if value is not None:
            setattr(row, name, value)


def list_steps(session: Session, pipeline_run_id: str) -> list[StepRun]:
    get_run(session, pipeline_run_id)
    query = (select(StepRunRow).where(StepRunRow.pipeline_run_id == pipeline_run_id)
             .order_by(StepRunRow.id))
    return [to_step_run(row) for row in session.scalars(query)]


def find_cached(session: Session, cache_key: str, newer_than: datetime | None) -> StepRun | None:
    query = (select(StepRunRow).where(StepRunRow.cache_key == cache_key,
                                      StepRunRow.state == StepState.SUCCEEDED.value)
             .order_by(StepRunRow.id.desc()).limit(1))
    if newer_than is not None:
        query = query.where(StepRunRow.ended_at > newer_than)
    row = session.scalars(query).first()
    return None if row is None else to_step_run(row)


def previous_step(session: Session, pipeline_id: str, step: str, before: int) -> StepRun | None:
    query = (select(StepRunRow).join(PipelineRunRow,
                                     PipelineRunRow.pipeline_run_id == StepRunRow.pipeline_run_id)
             .where(PipelineRunRow.pipeline_id == pipeline_id, StepRunRow.step == step,
                    StepRunRow.id < before, StepRunRow.cache_key.is_not(None))
             .order_by(StepRunRow.id.desc()).limit(1))
    row = session.scalars(query).first()
    return None if row is None else to_step_run(row)


def step_outputs(session: Session) -> list[StepOutputs]:
    query = (select(PipelineRunRow.status, PipelineRunRow.started_at, PipelineRunRow.ended_at,
                    StepRunRow.outputs)
             .join(PipelineRunRow, PipelineRunRow.pipeline_run_id == StepRunRow.pipeline_run_id))
    return [StepOutputs(PipelineRunStatus(status), as_utc(ended or started), dict(outputs))
            for status, started, ended, outputs in session.execute(query) if outputs]


def to_pipeline_run(row: PipelineRunRow) -> PipelineRun:
    return PipelineRun(
        pipeline_run_id=row.pipeline_run_id, pipeline_id=row.pipeline_id,
        status=PipelineRunStatus(row.status), source=dict(row.source),
        options=dict(row.options), run_id=row.run_id, started_at=as_utc(row.started_at),
        ended_at=None if row.ended_at is None else as_utc(row.ended_at))


def to_step_run(row: StepRunRow) -> StepRun:
    return StepRun(
        step_run_id=row.id, pipeline_run_id=row.pipeline_run_id, step=row.step,
        attempt=row.attempt, state=StepState(row.state),
        started_at=None if row.started_at is None else as_utc(row.started_at),
        ended_at=None if row.ended_at is None else as_utc(row.ended_at), error=row.error,
        cache_key=row.cache_key, cache_parts=dict(row.cache_parts or {}),
        outputs=dict(row.outputs or {}), cached_from=row.cached_from)


class SqlPipelineRunStore(SqlBase):
    """The `PipelineRunStore` methods of `SqlStore`: pipeline runs and their step attempts."""

    def create_pipeline_run(self, pipeline_run_id: str, pipeline_id: str,
                            source: dict[str, Any], options: dict[str, Any],
                            run_id: str | None = None) -> PipelineRun:
        with self._write() as session:
            return create_run(session, pipeline_run_id, pipeline_id, source,
                                                options, run_id)

    def get_pipeline_run(self, pipeline_run_id: str) -> PipelineRun:
        with self._read() as session:
            return get_run(session, pipeline_run_id)

    def find_pipeline_run(self, id_or_prefix: str) -> PipelineRun:
        with self._read() as session:
            return find_run(session, id_or_prefix)

    def list_pipeline_runs(self, pipeline_id: str | None = None,
                           status: PipelineRunStatus | None = None, limit: int = DEFAULT_LIMIT,
                           cursor: str | None = None) -> Page[PipelineRun]:
        with self._read() as session:
            return list_runs(session, pipeline_id, status, limit, cursor)

    def set_pipeline_run_status(self, pipeline_run_id: str,
                                status: PipelineRunStatus) -> PipelineRun:
        with self._write() as session:
            return set_status(session, pipeline_run_id, status)

    def add_step_run(self, pipeline_run_id: str, step: str, attempt: int, state: StepState,
                     started_at: datetime | None = None) -> StepRun:
        with self._write() as session:
            return add_step(session, pipeline_run_id, step, attempt, state,
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
            update_step(session, step_run_id, state, changes)

    def list_step_runs(self, pipeline_run_id: str) -> list[StepRun]:
        with self._read() as session:
            return list_steps(session, pipeline_run_id)

    def find_cached(self, cache_key: str, newer_than: datetime | None = None) -> StepRun | None:
        with self._read() as session:
            return find_cached(session, cache_key, newer_than)

    def previous_step_run(self, pipeline_id: str, step: str, before: int) -> StepRun | None:
        with self._read() as session:
            return previous_step(session, pipeline_id, step, before)

    def list_step_outputs(self) -> list[StepOutputs]:
        with self._read() as session:
            return step_outputs(session)
