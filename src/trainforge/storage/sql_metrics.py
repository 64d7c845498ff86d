"""Metric statements of the SQL store: bulk point inserts, latest-value upserts, series pages
and server-side min/max downsampling. Each function runs inside the caller's session
(transaction).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Select, and_, false, func, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from trainforge.entities import MetricPoint
from trainforge.storage.contracts import DEFAULT_LIMIT, HISTORY_LIMIT, Page
from trainforge.storage.cursors import Listing, check_limit
from trainforge.storage.sql_base import SqlBase, require_run
from trainforge.storage.sql_pages import OrderKey, fetch_page
from trainforge.storage.tables import MetricBatchRow, MetricRow, RunMetricRow, utcnow

Upsert = Callable[[Any], sqlite.Insert | postgresql.Insert]
_LATEST = RunMetricRow.__table__
_POINT: tuple[Any, ...] = (MetricRow.step, MetricRow.timestamp, MetricRow.value)
# A series' order: by step, then timestamp, then insertion (the id breaks every tie).
SERIES_ORDER = (OrderKey(MetricRow.step, (int,)), OrderKey(MetricRow.timestamp, (float, int)),
                OrderKey(MetricRow.id, (int,)))
_POINT_COLUMNS = "run_id, key, step, timestamp, value"


def stored_or_none(value: float) -> float | None:
    """NaN is stored as NULL (SQLite cannot store NaN); infinities are stored as they are."""
    return None if math.isnan(value) else float(value)


def loaded(value: float | None) -> float:
    return math.nan if value is None else value


def claim_batch(session: Session, upsert: Upsert, run_id: str, batch_id: str) -> bool:
    """Record `batch_id` for the run; False when it was stored before (a replay)."""
    table = MetricBatchRow.__table__
    statement = upsert(table).values(
        run_id=run_id, batch_id=batch_id, created_at=utcnow()
    ).on_conflict_do_nothing().returning(table.c.batch_id)
    # RETURNING, not rowcount: psycopg reports no rowcount for a skipped ON CONFLICT insert
    return session.execute(statement).first() is not None


def insert_points(session: Session, run_id: str, points: Sequence[MetricPoint]) -> None:
    """The points into the series table in one bulk statement: `COPY` on PostgreSQL, one
    prepared `INSERT` run over all rows by the driver on SQLite (both skip SQLAlchemy's per-row
    work, which costs more than the database here)."""
    rows = [(run_id, p.key, int(p.step), float(p.timestamp), stored_or_none(p.value))
            for p in points]
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        with connection.connection.driver_connection.cursor() as cursor:  # type: ignore[union-attr]
            with cursor.copy(f"COPY metrics ({_POINT_COLUMNS}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
    else:
        connection.exec_driver_sql(
            f"INSERT INTO metrics ({_POINT_COLUMNS}) VALUES (?, ?, ?, ?, ?)", rows
        )


def upsert_latest(session: Session, upsert: Upsert, run_id: str,
                  points: Iterable[MetricPoint]) -> None:
    """Move each key's latest value forward to the batch's last point, unless a summary value
    is set for it or a later point is already stored. Keys are written in sorted order, so
    concurrent writers of one run lock rows in one order (no deadlock on PostgreSQL)."""
    last: dict[str, MetricPoint] = {}
    for point in points:
        seen = last.get(point.key)
        if seen is None or (point.step, point.timestamp) >= (seen.step, seen.timestamp):
            last[point.key] = point
    if not last:
        return
    rows = [{"run_id": run_id, "key": key, "value": stored_or_none(p.value), "step": int(p.step),
             "timestamp": float(p.timestamp), "is_summary": False}
            for key, p in sorted(last.items())]
    statement = upsert(_LATEST)
    new = statement.excluded
    newer = or_(new.step > _LATEST.c.step,
                and_(new.step == _LATEST.c.step, new.timestamp >= _LATEST.c.timestamp))
    session.execute(statement.on_conflict_do_update(
        index_elements=["run_id", "key"],
        set_={"value": new.value, "step": new.step, "timestamp": new.timestamp},
        where=and_(_LATEST.c.is_summary == false(), newer),
    ), rows)


def upsert_summary(session: Session, upsert: Upsert, run_id: str,
                   metrics: dict[str, float], timestamp: float) -> None:
    """Set summary values: they win over logged points from now on."""
    rows = [{"run_id": run_id, "key": key, "value": stored_or_none(float(value)), "step": 0,
             "timestamp": timestamp, "is_summary": True} for key, value in sorted(metrics.items())]
    if not rows:
        return
    statement = upsert(_LATEST)
    new = statement.excluded
    session.execute(statement.on_conflict_do_update(
        index_elements=["run_id", "key"],
        set_={"value": new.value, "step": new.step, "timestamp": new.timestamp,
              "is_summary": new.is_summary},
    ), rows)


def latest_values(session: Session, run_ids: Sequence[str]) -> dict[str, dict[str, float]]:
    """run id → {key: value} of `run_metrics`, for each of `run_ids` (missing ones: {})."""
    found: dict[str, dict[str, float]] = {run_id: {} for run_id in run_ids}
    if run_ids:
        query = select(_LATEST.c.run_id, _LATEST.c.key, _LATEST.c.value).where(
            _LATEST.c.run_id.in_(list(run_ids))
        )
        for run_id, key, value in session.execute(query):
            found[run_id][key] = loaded(value)
    return found


def series(run_id: str, key: str) -> Select[Any]:
    """The points of one series (step, timestamp, value), to be ordered by `SERIES_ORDER`."""
    return select(*_POINT).where(MetricRow.run_id == run_id, MetricRow.key == key)


def point(key: str, row: Sequence[Any]) -> MetricPoint:
    """The point of a row of `series` (step, timestamp, value first)."""
    step, timestamp, value = row[:3]
    return MetricPoint(key, loaded(value), step, timestamp)


def downsampled(session: Session, run_id: str, key: str, max_points: int) -> list[MetricPoint]:
    """At most `max_points` points of the series, by step, timestamp, insertion: the steps are
    cut into max_points // 2 equal buckets and each bucket keeps its minimum and its maximum
    point (NaN counts as an extreme only in a bucket of NaNs), so spikes survive. A series no
    longer than `max_points` comes back whole."""
    of_series = and_(MetricRow.run_id == run_id, MetricRow.key == key)
    low, high, count = session.execute(
        select(func.min(MetricRow.step), func.max(MetricRow.step), func.count()).where(of_series)
    ).one()
    if count > max_points:
        return _downsampled(session, of_series, low, high - low + 1, max_points // 2, key)
    query = series(run_id, key).order_by(*(k.expression for k in SERIES_ORDER))
    return [point(key, row) for row in session.execute(query)]


def _downsampled(session: Session, of_series: Any, low: int, span: int, buckets: int,
                 key: str) -> list[MetricPoint]:
    bucket = ((MetricRow.step - low) * buckets) // span
    points = select(MetricRow.id, MetricRow.step, MetricRow.timestamp, MetricRow.value,
                    bucket.label("bucket")).where(of_series).subquery()
    by_value = (points.c.value.asc().nulls_last(), points.c.step, points.c.id)
    by_value_desc = (points.c.value.desc().nulls_last(), points.c.step, points.c.id)
    ranked = select(
        points,
        func.row_number().over(partition_by=points.c.bucket, order_by=by_value).label("low"),
        func.row_number().over(partition_by=points.c.bucket, order_by=by_value_desc)
        .label("high"),
    ).subquery()
    query = (select(ranked.c.step, ranked.c.timestamp, ranked.c.value)
             .where(or_(ranked.c.low == 1, ranked.c.high == 1))
             .order_by(ranked.c.step, ranked.c.timestamp, ranked.c.id))
    return [MetricPoint(key, loaded(v), s, t) for s, t, v in session.execute(query)]


class SqlMetricStore(SqlBase):
    """The `MetricStore` methods of `SqlStore` (`delete_metrics_after`, the rewind to a
    checkpoint, is `SqlCheckpointStore`'s)."""

    def log_metrics(
        self, run_id: str, points: Sequence[MetricPoint], batch_id: str | None = None
    ) -> bool:
        """Append `points` to the run's series in one bulk insert and move its latest values
        forward, in one transaction. With a `batch_id` already stored for the run, nothing is
        written and False is returned; otherwise True."""
        if not points:
            return True
        with self._write() as session:
            require_run(session, run_id)
            if batch_id is not None and not claim_batch(
                session, self._insert, run_id, batch_id
            ):
                return False
            insert_points(session, run_id, points)
            upsert_latest(session, self._insert, run_id, points)
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
            require_run(session, run_id)
            if max_points is not None:
                return Page(tuple(downsampled(session, run_id, key, max_points)))
            rows, next_cursor = fetch_page(session, listing, series(run_id, key),
                                           SERIES_ORDER, limit, cursor)
            return Page(tuple(point(key, row) for row in rows), next_cursor)

    def metric_keys(
        self, run_id: str, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[str]:
        """The names of the run's metric series, sorted."""
        query = select().select_from(MetricRow).where(MetricRow.run_id == run_id).distinct()
        keys = (OrderKey(MetricRow.key, (str,)),)
        with self._read() as session:
            require_run(session, run_id)
            rows, next_cursor = fetch_page(session, Listing("metric_keys", (run_id,)), query,
                                           keys, limit, cursor)
            return Page(tuple(row[0] for row in rows), next_cursor)
