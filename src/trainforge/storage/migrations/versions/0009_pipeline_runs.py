"""Pipeline runs and their steps' attempts: `pipeline_runs` (one execution of a DAG: status, how
to build it again, the runner's options, the tracked run) and `step_runs` (one attempt of one
step: state, timings, error, cache key and its parts, outputs as value-store references).

Downgrading drops both tables, and with them every recorded step state and cache entry (the
stored values stay in the value store).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _id() -> sa.types.TypeEngine[Any]:
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "pipeline_runs",
        sa.Column("pipeline_run_id", sa.String(length=64), nullable=False),
        sa.Column("pipeline_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("source", _json(), nullable=False),
        sa.Column("options", _json(), nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["pipeline_id"], ["pipelines.pipeline_id"],
                                name=op.f("fk_pipeline_runs_pipeline_id_pipelines")),
        sa.PrimaryKeyConstraint("pipeline_run_id", name=op.f("pk_pipeline_runs")),
    )
    op.create_index("ix_pipeline_runs_pipeline_id_started_at", "pipeline_runs",
                    ["pipeline_id", "started_at"])
    op.create_table(
        "step_runs",
        sa.Column("id", _id(), primary_key=True, autoincrement=True),
        sa.Column("pipeline_run_id", sa.String(length=64), nullable=False),
        sa.Column("step", sa.String(length=255), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("cache_key", sa.String(length=64), nullable=True),
        sa.Column("cache_parts", _json(), nullable=False),
        sa.Column("outputs", _json(), nullable=False),
        sa.Column("cached_from", _id(), nullable=True),
        sa.ForeignKeyConstraint(["pipeline_run_id"], ["pipeline_runs.pipeline_run_id"],
                                name=op.f("fk_step_runs_pipeline_run_id_pipeline_runs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_step_runs")),
    )
    op.create_index("ix_step_runs_pipeline_run_id_step", "step_runs",
                    ["pipeline_run_id", "step"])
    op.create_index("ix_step_runs_cache_key", "step_runs", ["cache_key"])


def downgrade() -> None:
    op.drop_table("step_runs")
    op.drop_table("pipeline_runs")
