"""Data profiles in the database: `data_profiles` (a file's or a data version's profile as
JSON, keyed by the file's sha256 or the version id), so a window of days is profiled and
compared without reading data.

Downgrading drops the table, and with it every stored profile.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "data_profiles",
        sa.Column("profile_key", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("rows", sa.BigInteger(), nullable=False),
        sa.Column("profile", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("profile_key", name=op.f("pk_data_profiles")),
    )


def downgrade() -> None:
    op.drop_table("data_profiles")
