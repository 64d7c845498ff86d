"""Run system state: `runs.system` (what trainforge reads back, apart from user params and
tags) and `runs.spec_hash` (what a pipeline run trains, matched by `resume: auto`).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
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
    op.drop_index("ix_runs_spec_hash", "runs")
    op.drop_column("runs", "spec_hash")
    op.drop_column("runs", "system")
