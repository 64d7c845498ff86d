"""Initial schema: pipelines, experiments, data versions, runs, metric series, model versions.

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _timestamp() -> sa.types.TypeEngine[Any]:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "data_versions",
        sa.Column("data_version_id", sa.String(128), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("files", _json(), nullable=False),
        sa.Column("num_rows", sa.BigInteger(), nullable=False),
        sa.Column("created_at", _timestamp(), nullable=False),
        sa.PrimaryKeyConstraint("data_version_id", name="pk_data_versions"),
    )
    op.create_table(
        "experiments",
        sa.Column("experiment_id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("created_at", _timestamp(), nullable=False),
        sa.PrimaryKeyConstraint("experiment_id", name="pk_experiments"),
        sa.UniqueConstraint("name", name="uq_experiments_name"),
    )
    op.create_table(
        "pipelines",
        sa.Column("pipeline_id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("dag_config", _json(), nullable=False),
        sa.Column("schedule", sa.String(255), nullable=True),
        sa.Column("created_by", sa.String(255), nullable=True),
        sa.Column("created_at", _timestamp(), nullable=False),
        sa.PrimaryKeyConstraint("pipeline_id", name="pk_pipelines"),
    )
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("experiment_id", sa.String(64), nullable=False),
        sa.Column("pipeline_id", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("params", _json(), nullable=False),
        sa.Column("metrics", _json(), nullable=False),
        sa.Column("tags", _json(), nullable=False),
        sa.Column("environment", _json(), nullable=False),
        sa.Column("artifact_uri", sa.Text(), nullable=False),
        sa.Column("started_at", _timestamp(), nullable=False),
        sa.Column("ended_at", _timestamp(), nullable=True),
        sa.Column("git_commit", sa.String(64), nullable=True),
        sa.Column("git_dirty", sa.Boolean(), nullable=True),
        sa.Column("data_version_id", sa.String(128), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["data_version_id"], ["data_versions.data_version_id"],
            name="fk_runs_data_version_id_data_versions",
        ),
        sa.ForeignKeyConstraint(
            ["experiment_id"], ["experiments.experiment_id"],
            name="fk_runs_experiment_id_experiments",
        ),
        sa.ForeignKeyConstraint(
            ["pipeline_id"], ["pipelines.pipeline_id"], name="fk_runs_pipeline_id_pipelines"
        ),
        sa.PrimaryKeyConstraint("run_id", name="pk_runs"),
    )
    op.create_index("ix_runs_experiment_id_started_at", "runs", ["experiment_id", "started_at"])
    op.create_index("ix_runs_status", "runs", ["status"])
    op.create_table(
        "metrics",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True, nullable=False,
        ),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=False),
        sa.Column("timestamp", sa.Double(), nullable=False),
        sa.Column("value", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_metrics_run_id_runs"),
        sa.PrimaryKeyConstraint("id", name="pk_metrics"),
    )
    op.create_index("ix_metrics_run_id_key_step", "metrics", ["run_id", "key", "step"])
    op.create_table(
        "model_versions",
        sa.Column("model_name", sa.String(255), nullable=False),
        sa.Column("version", sa.String(32), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("stage", sa.String(16), nullable=False),
        sa.Column("artifact_uri", sa.Text(), nullable=False),
        sa.Column("metrics", _json(), nullable=False),
        sa.Column("data_version_id", sa.String(128), nullable=True),
        sa.Column("git_commit", sa.String(64), nullable=True),
        sa.Column("created_at", _timestamp(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_model_versions_run_id_runs"),
        sa.PrimaryKeyConstraint("model_name", "version", name="pk_model_versions"),
    )


def downgrade() -> None:
    op.drop_table("model_versions")
    op.drop_index("ix_metrics_run_id_key_step", table_name="metrics")
    op.drop_table("metrics")
    op.drop_index("ix_runs_status", table_name="runs")
    op.drop_index("ix_runs_experiment_id_started_at", table_name="runs")
    op.drop_table("runs")
    op.drop_table("pipelines")
    op.drop_table("experiments")
    op.drop_table("data_versions")
