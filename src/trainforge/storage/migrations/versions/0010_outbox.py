"""The event outbox: `outbox_events` (each event, written in the transaction of what it
announces) and `event_deliveries` (the delivery of one event to one webhook: state, attempts,
next attempt, lease), and the attempt log's link to its delivery
(`webhook_deliveries.event_delivery_id`, NULL for attempts made before the outbox).

Downgrading drops both tables and the column, and with them every undelivered event.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _id() -> sa.types.TypeEngine[Any]:
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "outbox_events",
        sa.Column("id", _id(), primary_key=True, autoincrement=True),
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("subject", sa.String(320), nullable=False),
        sa.Column("stage_change_id", _id(), nullable=True),
        sa.Column("data", _json(), nullable=True),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["stage_change_id"], ["model_stage_changes.id"],
                                name="fk_outbox_events_stage_change_id_model_stage_changes"),
        sa.PrimaryKeyConstraint("id", name="pk_outbox_events"),
        sa.UniqueConstraint("event_id", name="uq_outbox_events_event_id"),
    )
    op.create_table(
        "event_deliveries",
        sa.Column("id", _id(), primary_key=True, autoincrement=True),
        sa.Column("outbox_id", _id(), nullable=False),
        sa.Column("webhook_id", _id(), nullable=False),
        sa.Column("subject", sa.String(320), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("round_attempts", sa.Integer(), nullable=False),
        sa.Column("round_started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("leased_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["outbox_id"], ["outbox_events.id"],
                                name="fk_event_deliveries_outbox_id_outbox_events"),
        sa.ForeignKeyConstraint(["webhook_id"], ["webhooks.id"],
                                name="fk_event_deliveries_webhook_id_webhooks"),
        sa.PrimaryKeyConstraint("id", name="pk_event_deliveries"),
    )
    op.create_index("ix_event_deliveries_state_next_attempt_at", "event_deliveries",
                    ["state", "next_attempt_at"])
    op.create_index("ix_event_deliveries_webhook_id_subject_outbox_id", "event_deliveries",
                    ["webhook_id", "subject", "outbox_id"])
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.add_column(sa.Column("event_delivery_id", _id(), nullable=True))
        batch.create_foreign_key("fk_webhook_deliveries_event_delivery_id_event_deliveries",
                                 "event_deliveries", ["event_delivery_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_constraint("fk_webhook_deliveries_event_delivery_id_event_deliveries",
                              type_="foreignkey")
        batch.drop_column("event_delivery_id")
    op.drop_table("event_deliveries")
    op.drop_table("outbox_events")
