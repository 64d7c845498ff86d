"""Keyset pages in SQL: a query ordered by a list of keys, continued after a cursor's key.

Each key is an expression, a direction and the Python types of its values (NoneType among them
when it can be NULL, which sorts last in either direction, as `sql_search` orders). A page
query selects the keys' values after the caller's columns, so the last row of a page gives
the next cursor, and it fetches one row more than the page holds, to tell whether there is a
next page at all. The keys must end with a unique one (a primary key), so the order is total.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, Select, and_, false, or_
from sqlalchemy.orm import InstrumentedAttribute, Session
from sqlalchemy.sql.elements import ColumnElement

from trainforge.storage.cursors import Listing, Types, check_limit

NoneType = type(None)


@dataclass(frozen=True)
class OrderKey:
    expression: ColumnElement[Any] | InstrumentedAttribute[Any]
    types: Types
    descending: bool = False

    @property
    def nullable(self) -> bool:
        return NoneType in self.types


def fetch_page(
    session: Session, listing: Listing, query: Select[Any], keys: Sequence[OrderKey],
    limit: int, cursor: str | None,
) -> tuple[Sequence[Row[Any]], str | None]:
    """The rows of one page of `query` ordered by `keys` (the keys' values appended to each
    row), starting after `cursor`, and the cursor of the next page (None on the last).
    `ValueError` for a limit < 1 or a cursor `listing` did not make."""
    check_limit(limit)
    after = listing.decode(cursor, [key.types for key in keys])
    rows = session.execute(page_query(query, keys, after, limit)).all()
    return listing.cut(rows, limit, lambda row: tuple(row)[-len(keys):])


def page_query(
    query: Select[Any], keys: Sequence[OrderKey], after: Sequence[Any] | None, limit: int
) -> Select[Any]:
    """`query` plus the keys' values as its last columns, ordered by the keys, only the rows
    after the key `after` (all rows for None), at most `limit + 1` of them."""
    # Labelled: one expression may be a key twice (`-started_at` before the newest-first tail)
    query = query.add_columns(*(key.expression.label(f"page_key_{position}")
                                for position, key in enumerate(keys)))
    if after is not None:
        query = query.where(_after(keys, after))
    return query.order_by(*(_ordered(key) for key in keys)).limit(limit + 1)


def _ordered(key: OrderKey) -> ColumnElement[Any]:
    # NULLS LAST only where a NULL can be: a plain key keeps the order an index can serve.
    ordered = key.expression.desc() if key.descending else key.expression.asc()
    return ordered.nulls_last() if key.nullable else ordered


def _after(keys: Sequence[OrderKey], values: Sequence[Any]) -> ColumnElement[bool]:
    """Rows sorting after `values`: for some position, equal on every key before it and after
    on the key there (lexicographic order, NULLs last)."""
    branches = []
    for position, (key, value) in enumerate(zip(keys, values)):
        equal_before = [_equal(k, v) for k, v in zip(keys[:position], values[:position])]
        branches.append(and_(*equal_before, _beyond(key, value)))
    return or_(*branches)


def _equal(key: OrderKey, value: Any) -> ColumnElement[bool]:
    return key.expression.is_(None) if value is None else key.expression == value


def _beyond(key: OrderKey, value: Any) -> ColumnElement[bool]:
    if value is None:
        return false()  # NULL sorts last: nothing is beyond it on this key
    beyond = key.expression < value if key.descending else key.expression > value
    return or_(beyond, key.expression.is_(None)) if key.nullable else beyond
