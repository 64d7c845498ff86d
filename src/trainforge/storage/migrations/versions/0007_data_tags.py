"""Named data versions: `data_tags` (`name@tag` → a data version; `data snapshot --name NAME`
moves `NAME@latest`, `data tag` sets any other tag).

Downgrading drops the table, and with it every tag (the versions stay).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "data_tags",
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("tag", sa.String(length=255), nullable=False),
        sa.Column("data_version_id", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["data_version_id"], ["data_versions.data_version_id"],
                                name=op.f("fk_data_tags_data_version_id_data_versions")),
        sa.PrimaryKeyConstraint("name", "tag", name=op.f("pk_data_tags")),
    )


def downgrade() -> None:
    op.drop_table("data_tags")
