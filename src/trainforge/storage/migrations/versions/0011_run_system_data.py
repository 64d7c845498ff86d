"""The `data` entry of `runs.system` (the data contract file and target column a run's model
checks records against: what export and serving read), filled in for runs recorded before
it from their recorded spec (`params.data`), so no decision reads user params.

Downgrading leaves the entry in place: older versions do not read it.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None


def _runs() -> sa.TableClause:
    json: sa.types.TypeEngine[Any] = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
    return sa.table("runs", sa.column("run_id", sa.String(64)), sa.column("params", json),
                    sa.column("system", json))


def upgrade() -> None:
    runs = _runs()
    connection = op.get_bind()
    for run_id, params, system in connection.execute(
            sa.select(runs.c.run_id, runs.c.params, runs.c.system)).all():
        data = (params or {}).get("data")
        if (system or {}).get("data") is not None or not isinstance(data, dict) \
                or not isinstance(data.get("target"), str):
            continue
        contract = data.get("contract")
        entry = {"contract": contract if isinstance(contract, str) else None,
                 "target": data["target"]}
        connection.execute(runs.update().where(runs.c.run_id == run_id)
                           .values(system={**(system or {}), "data": entry}))


def downgrade() -> None:
    pass
