"""Checkpoint statements of the SQL store: checkpoint records, and rewinding a run's metric
series to the step of the checkpoint it resumes from. Each function runs inside the caller's
session (transaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Select, Table, delete, false, func, insert, literal, select
from sqlalchemy.orm import Session

from trainforge.entities import CheckpointRecord
from trainforge.errors import NotFound
from trainforge.storage.contracts import DEFAULT_LIMIT, Page
from trainforge.storage.cursors import Listing
from trainforge.storage.records import metrics_from_json, metrics_json
from trainforge.storage.sql_base import SqlBase, require_run
from trainforge.storage.sql_metrics import Upsert
from trainforge.storage.sql_pages import OrderKey, fetch_page
from trainforge.storage.tables import CheckpointRow, MetricRow, RunMetricRow, as_utc, utcnow

_LATEST = cast(Table, RunMetricRow.__table__)
_SERIES = cast(Table, MetricRow.__table__)
BY_STEP = (OrderKey(CheckpointRow.step, (int,)),)


def upsert_checkpoint(session: Session, upsert: Upsert, run_id: str, step: int, uri: str,
                      epoch: int | None, metrics: dict[str, float]) -> CheckpointRecord:
    """Record the checkpoint at (run, step), overwriting one recorded there before: new uri,
    epoch, metrics and creation time, and no longer deleted."""
    stored, created_at = metrics_json(metrics), utcnow()
    fields = {"uri": uri, "epoch": epoch, "metrics": stored, "created_at": created_at,
              "deleted_at": None}
    session.execute(upsert(CheckpointRow).values(run_id=run_id, step=step, **fields)
                    .on_conflict_do_update(index_elements=["run_id", "step"], set_=fields))
    return CheckpointRecord(run_id=run_id, step=step, uri=uri, epoch=epoch,
                            metrics=metrics_from_json(stored), created_at=created_at)


def checkpoints(run_id: str, include_deleted: bool) -> Select[Any]:
    """The run's checkpoint rows, to be ordered `BY_STEP`; those whose files were deleted only
    if `include_deleted`."""
    query = select(CheckpointRow).where(CheckpointRow.run_id == run_id)
    if not include_deleted:
        query = query.where(CheckpointRow.deleted_at.is_(None))
    return query


def rewind_series(session: Session, run_id: str, step: int,
                  keys: Sequence[str] | None = None) -> int:
    """Delete the run's points above `step` (of the series in `keys` only, when given), and
    set each latest value that came from one of them (summaries never do) to the key's last
    point left, or remove it when none is left. Returns how many points were deleted."""
    connection = session.connection()
    series = [_SERIES.c.run_id == run_id, _SERIES.c.step > step]
    latest = [_LATEST.c.run_id == run_id, _LATEST.c.is_summary == false(), _LATEST.c.step > step]
    if keys is not None:
        series.append(_SERIES.c.key.in_(list(keys)))
        latest.append(_LATEST.c.key.in_(list(keys)))
    deleted = connection.execute(delete(_SERIES).where(*series)).rowcount
    stale = list(connection.scalars(delete(_LATEST).where(*latest).returning(_LATEST.c.key)))
    if stale:
        columns = ["run_id", "key", "value", "step", "timestamp", "is_summary"]
        connection.execute(insert(_LATEST).from_select(columns, _last_points(run_id, stale)))
    return deleted


def _last_points(run_id: str, keys: list[str]) -> Select[Any]:
    """Rows of `run_metrics` for the last point of each series in `keys` that has points:
    highest step, then latest timestamp, then last inserted (as `upsert_latest` orders them)."""
    order = (_SERIES.c.step.desc(), _SERIES.c.timestamp.desc(), _SERIES.c.id.desc())
    ranked = select(
        _SERIES.c.key, _SERIES.c.value, _SERIES.c.step, _SERIES.c.timestamp,
        func.row_number().over(partition_by=_SERIES.c.key, order_by=order).label("position"),
    ).where(_SERIES.c.run_id == run_id, _SERIES.c.key.in_(keys)).subquery()
    return select(literal(run_id), ranked.c.key, ranked.c.value, ranked.c.step,
                  ranked.c.timestamp, false()).where(ranked.c.position == 1)


def record(row: CheckpointRow) -> CheckpointRecord:
    return CheckpointRecord(
        run_id=row.run_id, step=row.step, uri=row.uri, epoch=row.epoch,
        metrics=metrics_from_json(row.metrics), created_at=as_utc(row.created_at),
        deleted_at=None if row.deleted_at is None else as_utc(row.deleted_at),
    )


class SqlCheckpointStore(SqlBase):
    """The `CheckpointStore` methods of `SqlStore`, and `delete_metrics_after`: a resumed run's
    series rewound to its checkpoint."""

    def record_checkpoint(
        self, run_id: str, step: int, uri: str, epoch: int | None = None,
        metrics: dict[str, float] | None = None,
    ) -> CheckpointRecord:
        """Record the checkpoint the run saved at `step`. A step recorded before (a resumed run
        saving it again) is overwritten: new uri, epoch, metrics and creation time, not deleted.
        A metric value of NaN or infinity is read back as NaN."""
        with self._write() as session:
            require_run(session, run_id)
            return upsert_checkpoint(
                session, self._insert, run_id, step, uri, epoch, metrics or {}
            )

    def mark_checkpoint_deleted(self, run_id: str, step: int) -> None:
        """Record that the files of the checkpoint at `step` were deleted, now; a checkpoint
        already marked keeps its first time."""
        with self._write() as session:
            require_run(session, run_id)
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
        query = checkpoints(run_id, include_deleted)
        listing = Listing("list_checkpoints", (run_id, include_deleted))
        with self._read() as session:
            require_run(session, run_id)
            rows, next_cursor = fetch_page(session, listing, query, BY_STEP,
                                           limit, cursor)
            return Page(tuple(record(row[0]) for row in rows), next_cursor)

    def delete_metrics_after(self, run_id: str, step: int,
                             keys: Sequence[str] | None = None) -> int:
        """Rewind the run's series to `step`, the step of the checkpoint it resumes from:
        delete every point above it and set each latest value taken from one of those points to
        the key's last point left (none left: no value); summary values stay. Returns how many
        points were deleted."""
        with self._write() as session:
            require_run(session, run_id)
            return rewind_series(session, run_id, step, keys)
