"""Hyperparameter studies in the tracking database: `tuning_journal` (Optuna's journal, one
operation per row, numbered densely from 0) and `tuning_heartbeats` (the latest heartbeat of
each running trial, so a dead worker's trial is failed and retried).

Downgrading drops both tables, and with them every study.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "tuning_journal",
        sa.Column("log_number", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("log_number", name=op.f("pk_tuning_journal")),
    )
    op.create_table(
        "tuning_heartbeats",
        sa.Column("trial_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("trial_id", name=op.f("pk_tuning_heartbeats")),
    )


def downgrade() -> None:
    op.drop_table("tuning_heartbeats")
    op.drop_table("tuning_journal")
