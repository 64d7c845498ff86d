"""The model registry: lineage on `model_versions` (`features_hash`, the feature pipeline's
content hash; `environment`, a summary of where the model was trained, `{}` for existing
versions), at most one `production` and one `canary` version per model (a partial unique
index), the stage history (`model_stage_changes`), aliases (`model_aliases`), and webhook
subscriptions with their delivery log (`webhooks`, `webhook_deliveries`).

Existing versions keep their stage; each gets no history row (their registration predates
the history). Downgrading drops the tables and columns, and what they held.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None

_SINGLE_HOLDER = "stage IN ('production', 'canary')"
_VERSION_FK = (["model_name", "version"], ["model_versions.model_name", "model_versions.version"])


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _id() -> sa.types.TypeEngine[Any]:
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column("model_versions", sa.Column("features_hash", sa.String(64), nullable=True))
    op.add_column("model_versions",
                  sa.Column("environment", _json(), nullable=False, server_default="{}"))
    op.create_index("uq_model_versions_single_holder", "model_versions", ["model_name", "stage"],
                    unique=True, sqlite_where=sa.text(_SINGLE_HOLDER),
                    postgresql_where=sa.text(_SINGLE_HOLDER))
    op.create_table(
        "model_stage_changes",
        sa.Column("id", _id(), primary_key=True, autoincrement=True),
        sa.Column("model_name", sa.String(255), nullable=False),
        sa.Column("version", sa.String(32), nullable=False),
        sa.Column("from_stage", sa.String(16), nullable=True),
        sa.Column("to_stage", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("forced", sa.Boolean(), nullable=False),
        sa.Column("user", sa.String(255), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("gate_report", _json(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(*_VERSION_FK,
                                name="fk_model_stage_changes_model_name_model_versions"),
        sa.PrimaryKeyConstraint("id", name="pk_model_stage_changes"),
    )
    op.create_index("ix_model_stage_changes_model_name_id", "model_stage_changes",
                    ["model_name", "id"])
    op.create_table(
        "model_aliases",
        sa.Column("model_name", sa.String(255), nullable=False),
        sa.Column("alias", sa.String(64), nullable=False),
        sa.Column("version", sa.String(32), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(*_VERSION_FK, name="fk_model_aliases_model_name_model_versions"),
        sa.PrimaryKeyConstraint("model_name", "alias", name="pk_model_aliases"),
    )
    op.create_table(
        "webhooks",
        sa.Column("id", _id(), primary_key=True, autoincrement=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("events", _json(), nullable=False),
        sa.Column("secret_env", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_webhooks"),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", _id(), primary_key=True, autoincrement=True),
        sa.Column("webhook_id", _id(), nullable=False),
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("delivered", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["webhook_id"], ["webhooks.id"],
                                name="fk_webhook_deliveries_webhook_id_webhooks"),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_deliveries"),
    )
    op.create_index("ix_webhook_deliveries_webhook_id_id", "webhook_deliveries",
                    ["webhook_id", "id"])


def downgrade() -> None:
    op.drop_table("webhook_deliveries")
    op.drop_table("webhooks")
    op.drop_table("model_aliases")
    op.drop_table("model_stage_changes")
    op.drop_index("uq_model_versions_single_holder", table_name="model_versions")
    op.drop_column("model_versions", "environment")
    op.drop_column("model_versions", "features_hash")
