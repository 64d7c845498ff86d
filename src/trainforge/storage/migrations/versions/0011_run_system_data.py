"""What trainforge decides by, recorded apart from user params, filled in for the runs
recorded before from their params (the resolved spec a pipeline run logged there):

- the `data` entry of `runs.system`: the data contract file and target column a run's model
  checks records against (what export and serving read);
- `system.resolved_spec`: the resolved spec (what a resume compares and promotion gates
  read), for the runs with a `spec` entry (pipeline runs).

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
        added = {**_data_entry(params or {}, system or {}),
                 **_resolved_spec(params or {}, system or {})}
        if added:
            connection.execute(runs.update().where(runs.c.run_id == run_id)
                               .values(system={**(system or {}), **added}))


def _data_entry(params: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    data = params.get("data")
    if "data" in system or not isinstance(data, dict) or not isinstance(data.get("target"), str):
        return {}
    contract = data.get("contract")
    return {"data": {"contract": contract if isinstance(contract, str) else None,
                     "target": data["target"]}}


def _resolved_spec(params: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    if "spec" not in system or "resolved_spec" in system or not params:
        return {}
    return {"resolved_spec": params}


def downgrade() -> None:
    pass
