"""The users of `trainforge server` and their API tokens: `users` (a name, the most its
tokens may do, when it was added) and `api_tokens` (a user's token: its id, role, the hash of
its secret, a description, when it was created, expires, was revoked and last used), indexed
by user and creation for listing a user's tokens.

Downgrading drops both tables, and with them every user and token: a server of an older
version has none.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_users"),
    )
    op.create_table(
        "api_tokens",
        sa.Column("token_id", sa.String(64), nullable=False),
        sa.Column("user", sa.String(255), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user"], ["users.name"], name="fk_api_tokens_user_users"),
        sa.PrimaryKeyConstraint("token_id", name="pk_api_tokens"),
    )
    op.create_index("ix_api_tokens_user_created_at_token_id", "api_tokens",
                    ["user", "created_at", "token_id"])


def downgrade() -> None:
    op.drop_table("api_tokens")
    op.drop_table("users")
