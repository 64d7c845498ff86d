"""The run query AST (`storage.query`) translated to SQL on SQLite and PostgreSQL.

- `metrics.X` reads `run_metrics` (summary value, else last logged point): a filter is an `IN`
  over the (key, value) index, a sort a left join on the (run, key) primary key;
- `params.a.b` and `tags.a.b` are JSON paths into the run's columns (`json_extract` on SQLite,
  `jsonb_extract_path` on PostgreSQL). A number compares only with numbers and a string only
  with strings, so a run whose value has the other type (or none) never matches;
- a params / tags sort puts numbers (by value) before strings (by text), on both backends;
- every sort puts missing values last, then breaks ties by newest `started_at`, then run id.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Double, Select, and_, case, cast, func, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import InstrumentedAttribute, aliased
from sqlalchemy.sql.elements import ColumnElement

from trainforge.storage.query import Comparison, SortKey
from trainforge.storage.tables import ExperimentRow, RunMetricRow, RunRow

_OPERATORS: dict[str, Callable[[Any, Any], ColumnElement[bool]]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}


def search_query(
    dialect: str,
    experiment_ids: Sequence[str] | None,
    comparisons: Sequence[Comparison],
    sort: Sequence[SortKey],
    limit: int,
    offset: int,
) -> Select[str]:
    """The ids of the matching runs, in order, one page of them."""
    query = select(RunRow.run_id)
    if experiment_ids is not None:
        query = query.where(RunRow.experiment_id.in_(list(experiment_ids)))
    for comparison in comparisons:
        query = query.where(_condition(dialect, comparison))
    order = []
    for key in sort:
        if key.field.kind == "metrics":
            latest = aliased(RunMetricRow)
            query = query.outerjoin(
                latest, and_(latest.run_id == RunRow.run_id, latest.key == key.field.name)
            )
            expressions: list[Any] = [latest.value]
        elif key.field.kind == "attribute":
            expressions = [getattr(RunRow, key.field.name)]
        else:
            column = RunRow.params if key.field.kind == "params" else RunRow.tags
            expressions = [_json_scalar(dialect, column, key.field.path, numeric)
                           for numeric in (True, False)]
        order += [(e.desc() if key.descending else e.asc()).nulls_last() for e in expressions]
    return query.order_by(*order, RunRow.started_at.desc(), RunRow.run_id).limit(limit).offset(
        offset
    )


def _condition(dialect: str, comparison: Comparison) -> ColumnElement[bool]:
    compare = _OPERATORS[comparison.op]
    field, value = comparison.field, comparison.value
    if field.kind == "metrics":
        matching = select(RunMetricRow.run_id).where(
            RunMetricRow.key == field.name, compare(RunMetricRow.value, value)
        )
        return RunRow.run_id.in_(matching)
    if field.kind in ("params", "tags"):
        column = RunRow.params if field.kind == "params" else RunRow.tags
        return compare(_json_scalar(dialect, column, field.path, isinstance(value, float)), value)
    if field.name == "experiment":
        named = select(ExperimentRow.experiment_id).where(compare(ExperimentRow.name, value))
        return RunRow.experiment_id.in_(named)
    return compare(getattr(RunRow, field.name), value)


def _json_scalar(
    dialect: str, column: InstrumentedAttribute[Any], path: tuple[str, ...], numeric: bool
) -> ColumnElement[Any]:
    """The value at `path` when it is a number (`numeric`) or a string (else), otherwise NULL."""
    if dialect == "sqlite":
        json_path = _sqlite_path(path)
        kinds = ("integer", "real") if numeric else ("text",)
        return case((func.json_type(column, json_path).in_(kinds),
                     func.json_extract(column, json_path)))
    node = func.jsonb_extract_path(column, *path, type_=JSONB)
    text = func.jsonb_extract_path_text(column, *path)
    if numeric:
        return case((func.jsonb_typeof(node) == "number", cast(text, Double)))
    return case((func.jsonb_typeof(node) == "string", text))


def _sqlite_path(path: tuple[str, ...]) -> str:
    # Quoted labels keep names with '-', '/' or digits first literal; the query grammar
    # admits no quote characters in names.
    return "$" + "".join(f'."{part}"' for part in path)
