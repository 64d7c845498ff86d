"""The run query AST (`storage.query`) translated to SQL on SQLite and PostgreSQL.

- `metrics.X` reads `run_metrics` (summary value, else last logged point): a filter is an `IN`
  over the (key, value) index, a sort a left join on the (run, key) primary key;
- `params.a.b`, `tags.a.b` and `system.a.b` are JSON paths into the run's columns
  (`json_extract` on SQLite, `jsonb_extract_path` on PostgreSQL). A number compares only with
  numbers, a string only with strings and true / false only with booleans, so a run whose value
  has another type (or none) never matches, not even with `!=`;
- "and" and "or" of the filter are SQL's AND and OR of the comparisons, which keep a run whose
  value is missing out of both `x = v` and `x != v`;
- a params / tags / system sort puts numbers (by value) before strings (by text), on both
  backends;
- every sort puts missing values last, then breaks ties by newest `started_at`, then run id;
  those keys are what a page's cursor holds (`sql_pages`). SQLite stores a datetime as text and
  compares it as text, so there a time key is that text, exactly as stored: a cursor then
  compares as ORDER BY sorts, even a time another writer stored without microseconds.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Double,
    Select,
    String,
    and_,
    case,
    cast,
    func,
    or_,
    select,
    type_coerce,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import InstrumentedAttribute, aliased
from sqlalchemy.sql.elements import ColumnElement

from trainforge.storage.cursors import Types
from trainforge.storage.query import AllOf, Comparison, Condition, SortKey
from trainforge.storage.sql_pages import NoneType, OrderKey
from trainforge.storage.tables import ExperimentRow, RunMetricRow, RunRow

_OPERATORS: dict[str, Callable[[Any, Any], ColumnElement[bool]]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}
_JSON_COLUMNS: dict[str, InstrumentedAttribute[dict[str, Any]]] = {
    "params": RunRow.params, "tags": RunRow.tags, "system": RunRow.system,
}
_NUMBER: Types = (int, float, NoneType)
_TEXT: Types = (str, NoneType)
_TEXT_ATTRIBUTES = ("status", "run_id")


def newest_first(dialect: str) -> tuple[OrderKey, OrderKey]:
    """The order every run listing ends with: newest first, ties (one clock tick) by run id."""
    return (time_key(dialect, RunRow.started_at, descending=True),
            OrderKey(RunRow.run_id, (str,)))


def time_key(dialect: str, column: InstrumentedAttribute[Any], descending: bool,
             nullable: bool = False) -> OrderKey:
    """A key on a datetime column: its text as stored on SQLite (see the module docstring)."""
    kind: type = str if dialect == "sqlite" else datetime
    expression = type_coerce(column, String) if dialect == "sqlite" else column
    return OrderKey(expression, (kind, NoneType) if nullable else (kind,), descending)


def search_query(
    dialect: str,
    experiment_ids: Sequence[str] | None,
    condition: Condition | None,
    sort: Sequence[SortKey],
) -> tuple[Select[Any], list[OrderKey]]:
    """The ids of the runs meeting `condition` (None: all), and the keys that order them (the
    sort, then newest first, then run id): `sql_pages.page_query` makes one page of it."""
    query = select(RunRow.run_id)
    if experiment_ids is not None:
        query = query.where(RunRow.experiment_id.in_(list(experiment_ids)))
    if condition is not None:
        query = query.where(_condition(dialect, condition))
    keys: list[OrderKey] = []
    for key in sort:
        if key.field.kind == "metrics":
            latest = aliased(RunMetricRow)
            query = query.outerjoin(
                latest, and_(latest.run_id == RunRow.run_id, latest.key == key.field.name)
            )
            keys.append(OrderKey(latest.value, _NUMBER, key.descending))
        elif key.field.name in _TEXT_ATTRIBUTES:
            keys.append(OrderKey(getattr(RunRow, key.field.name), (str,), key.descending))
        elif key.field.kind == "attribute":
            nullable = bool(RunRow.__table__.c[key.field.name].nullable)
            keys.append(time_key(dialect, getattr(RunRow, key.field.name), key.descending,
                                 nullable))
        else:
            column = _JSON_COLUMNS[key.field.kind]
            keys += [OrderKey(_json_scalar(dialect, column, key.field.path, kind), types,
                              key.descending)
                     for kind, types in ((float, _NUMBER), (str, _TEXT))]
    return query, [*keys, *newest_first(dialect)]


def _condition(dialect: str, condition: Condition) -> ColumnElement[bool]:
    if isinstance(condition, Comparison):
        return _comparison(dialect, condition)
    terms = [_condition(dialect, term) for term in condition.terms]
    return and_(*terms) if isinstance(condition, AllOf) else or_(*terms)


def _comparison(dialect: str, comparison: Comparison) -> ColumnElement[bool]:
    compare = _OPERATORS[comparison.op]
    field, value = comparison.field, comparison.value
    if field.kind == "metrics":
        matching = select(RunMetricRow.run_id).where(
            RunMetricRow.key == field.name, compare(RunMetricRow.value, value)
        )
        return RunRow.run_id.in_(matching)
    if field.kind in _JSON_COLUMNS:
        column = _JSON_COLUMNS[field.kind]
        return compare(_json_scalar(dialect, column, field.path, type(value)), value)
    if field.name == "experiment":
        named = select(ExperimentRow.experiment_id).where(compare(ExperimentRow.name, value))
        return RunRow.experiment_id.in_(named)
    return compare(getattr(RunRow, field.name), value)


# The JSON types a value of each Python type compares with, as SQLite's json_type and
# PostgreSQL's jsonb_typeof name them.
_SQLITE_TYPES: dict[type, tuple[str, ...]] = {
    float: ("integer", "real"), str: ("text",), bool: ("true", "false"),
}
_POSTGRES_TYPES: dict[type, tuple[str, Any]] = {
    float: ("number", Double), str: ("string", String), bool: ("boolean", Boolean),
}


def _json_scalar(
    dialect: str, column: InstrumentedAttribute[Any], path: tuple[str, ...], kind: type
) -> ColumnElement[Any]:
    """The value at `path` when it is of `kind` (float: a number, str: a string, bool: true or
    false), otherwise NULL."""
    if dialect == "sqlite":
        json_path = _sqlite_path(path)
        return case((func.json_type(column, json_path).in_(_SQLITE_TYPES[kind]),
                     func.json_extract(column, json_path)))
    json_type, sql_type = _POSTGRES_TYPES[kind]
    node = func.jsonb_extract_path(column, *path, type_=JSONB)
    text = func.jsonb_extract_path_text(column, *path)
    return case((func.jsonb_typeof(node) == json_type, cast(text, sql_type)))


def _sqlite_path(path: tuple[str, ...]) -> str:
    # Quoted labels keep names with '-', '/' or digits first literal; the query grammar
    # admits no quote characters in names.
    return "$" + "".join(f'."{part}"' for part in path)
