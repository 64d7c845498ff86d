"""Registered pipelines: `pipelines.spec`, the resolved spec `trainforge pipelines register`
stored (what a submitted run of the pipeline runs, with its `submit:` mapping), and
`pipelines.registered_at`, when it was registered; both NULL for the pipelines their runs
recorded, which stay as they were.

Downgrading drops both columns, and with them what was registered: an older store knows the
pipelines only as their runs recorded them.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    json = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
    op.add_column("pipelines", sa.Column("spec", json, nullable=True))
    op.add_column("pipelines", sa.Column("registered_at", sa.DateTime(timezone=True),
                                         nullable=True))


def downgrade() -> None:
    # SQLite >= 3.35 drops a column no index holds in place (as 0013's downgrade does).
    op.drop_column("pipelines", "registered_at")
    op.drop_column("pipelines", "spec")
