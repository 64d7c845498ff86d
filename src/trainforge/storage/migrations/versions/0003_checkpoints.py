"""Checkpoint records: `checkpoints` (run, step) → where the checkpoint lies, its epoch and
metrics, when it was saved and when its files were deleted (NULL while they exist).

Revision ID: 0003
Revises: 0002
Create Date: 2026-03-01
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "checkpoints",
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("step", sa.BigInteger(), nullable=False),
        sa.Column("uri", sa.String(1024), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=True),
        sa.Column("metrics", _json(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_checkpoints_run_id_runs"),
        sa.PrimaryKeyConstraint("run_id", "step", name="pk_checkpoints"),
    )


def downgrade() -> None:
    op.drop_table("checkpoints")
