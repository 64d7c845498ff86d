"""System state apart from user data: `runs.system` (what trainforge reads back: liveness,
checkpoint location and policy, the spec a run started with; `{}` for existing runs) and
`runs.spec_hash` (the hash of the resolved spec a pipeline run executes, indexed).

Downgrading drops both columns, and with them what they held.

Revision ID: 0004
Revises: 0003
Create Date: 2026-04-01
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.add_column("runs", sa.Column("system", _json(), nullable=False, server_default="{}"))
    op.add_column("runs", sa.Column("spec_hash", sa.String(64), nullable=True))
    op.create_index("ix_runs_spec_hash", "runs", ["spec_hash"])


def downgrade() -> None:
    op.drop_index("ix_runs_spec_hash", table_name="runs")
    op.drop_column("runs", "spec_hash")
    op.drop_column("runs", "system")
