"""Tracking at scale: latest metric values as indexed rows, idempotent metric batches,
nested runs, heartbeats and device-hours.

- `run_metrics` (run, key) → value: filled with the last point of every existing series, then
  overwritten by each run's summary metrics (the `runs.metrics` JSON, dropped afterwards);
- `metric_batches` (run, batch id): batches already stored, for idempotent replay;
- `runs.parent_run_id`, `runs.heartbeat_at`, `runs.device_hours`, an index on `started_at`.

Revision ID: 0002
Revises: 0001
Create Date: 2026-02-01
"""

from __future__ import annotations

import json
import math
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql, sqlite

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

_RUN_METRICS = sa.table(
    "run_metrics", sa.column("run_id"), sa.column("key"), sa.column("value"),
    sa.column("step"), sa.column("timestamp"), sa.column("is_summary"),
)


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.add_column("runs", sa.Column("parent_run_id", sa.String(64), nullable=True))
    op.add_column("runs", sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("runs", sa.Column("device_hours", sa.Double(), nullable=False,
                                    server_default="0"))
    op.create_index("ix_runs_parent_run_id", "runs", ["parent_run_id"])
    op.create_index("ix_runs_started_at", "runs", ["started_at"])
    op.create_table(
        "run_metrics",
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("value", sa.Double(), nullable=True),
        sa.Column("step", sa.BigInteger(), nullable=False),
        sa.Column("timestamp", sa.Double(), nullable=False),
        sa.Column("is_summary", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_run_metrics_run_id_runs"),
        sa.PrimaryKeyConstraint("run_id", "key", name="pk_run_metrics"),
    )
    op.create_index("ix_run_metrics_key_value", "run_metrics", ["key", "value"])
    op.create_table(
        "metric_batches",
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("batch_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"],
                                name="fk_metric_batches_run_id_runs"),
        sa.PrimaryKeyConstraint("run_id", "batch_id", name="pk_metric_batches"),
    )
    _copy_last_points()
    _copy_summaries()
    op.drop_column("runs", "metrics")


def _copy_last_points() -> None:
    op.execute(
        "INSERT INTO run_metrics (run_id, key, value, step, timestamp, is_summary) "
        "SELECT run_id, key, value, step, timestamp, FALSE FROM ("
        " SELECT run_id, key, value, step, timestamp, ROW_NUMBER() OVER ("
        "  PARTITION BY run_id, key ORDER BY step DESC, timestamp DESC, id DESC) AS position"
        " FROM metrics) AS ranked WHERE position = 1"
    )


def _copy_summaries() -> None:
    bind = op.get_bind()
    insert = postgresql.insert if bind.dialect.name == "postgresql" else sqlite.insert
    runs = sa.table("runs", sa.column("run_id"), sa.column("metrics", _json()))
    rows = [
        {"run_id": run_id, "key": key, "value": _finite_or_none(value), "step": 0,
         "timestamp": 0.0, "is_summary": True}
        for run_id, metrics in bind.execute(sa.select(runs.c.run_id, runs.c.metrics))
        for key, value in (metrics if isinstance(metrics, dict) else json.loads(metrics)).items()
    ]
    if rows:
        statement = insert(_RUN_METRICS)
        bind.execute(statement.on_conflict_do_update(
            index_elements=["run_id", "key"],
            set_={name: statement.excluded[name] for name in ("value", "step", "timestamp",
                                                              "is_summary")},
        ), rows)


def _finite_or_none(value: Any) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None


def downgrade() -> None:
    op.add_column("runs", sa.Column("metrics", _json(), nullable=False, server_default="{}"))
    bind = op.get_bind()
    summaries: dict[str, dict[str, float | None]] = {}
    for run_id, key, value in bind.execute(
        sa.select(_RUN_METRICS.c.run_id, _RUN_METRICS.c.key, _RUN_METRICS.c.value)
        .where(_RUN_METRICS.c.is_summary == sa.true())
    ):
        summaries.setdefault(run_id, {})[key] = value
    runs = sa.table("runs", sa.column("run_id"), sa.column("metrics", _json()))
    for run_id, metrics in summaries.items():
        bind.execute(sa.update(runs).where(runs.c.run_id == run_id).values(metrics=metrics))
    op.drop_table("metric_batches")
    op.drop_index("ix_run_metrics_key_value", table_name="run_metrics")
    op.drop_table("run_metrics")
    op.drop_index("ix_runs_started_at", table_name="runs")
    op.drop_index("ix_runs_parent_run_id", table_name="runs")
    op.drop_column("runs", "device_hours")
    op.drop_column("runs", "heartbeat_at")
    op.drop_column("runs", "parent_run_id")
