"""Model version labels: `model_versions.label`, the version a client named a version ("3.1")
beside the number the store gave it, NULL for existing versions, and a unique index on
(model_name, label) so that a label names one version of a model (NULL labels never collide).

Downgrading drops the index and the column, and with them every label: a store of an older
version finds versions by number only.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("model_versions", sa.Column("label", sa.String(64), nullable=True))
    op.create_index("uq_model_versions_label", "model_versions", ["model_name", "label"],
                    unique=True)


def downgrade() -> None:
    op.drop_index("uq_model_versions_label", table_name="model_versions")
    # Not batch mode: on SQLite it copies the table and drops the old one, which the stage
    # history and aliases reference (foreign keys are on, and cannot be turned off inside the
    # migration's transaction). SQLite >= 3.35 drops a column no index holds in place, as
    # 0005's downgrade does.
    op.drop_column("model_versions", "label")
