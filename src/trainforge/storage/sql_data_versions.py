"""Data version statements of the SQL store: listing versions newest first, looking ids up by
prefix, and the `name@tag` pointers. Each function runs inside the caller's session."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from trainforge.entities import DataTag, DataVersion
from trainforge.errors import Conflict, NotFound
from trainforge.storage.contracts import DEFAULT_LIMIT, Page
from trainforge.storage.cursors import Listing
from trainforge.storage.records import to_data_version
from trainforge.storage.sql_base import SqlBase, get_row
from trainforge.storage.sql_pages import OrderKey, fetch_page
from trainforge.storage.tables import DataProfileRow, DataTagRow, DataVersionRow, as_utc, utcnow

NEWEST_FIRST = (OrderKey(DataVersionRow.created_at, (datetime,), descending=True),
                OrderKey(DataVersionRow.data_version_id, (str,), descending=True))


def versions() -> Select[Any]:
    return select(DataVersionRow)


def ids_starting(session: Session, prefix: str, limit: int) -> list[str]:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    query = (select(DataVersionRow.data_version_id)
             .where(DataVersionRow.data_version_id.like(f"{escaped}%", escape="\\"))
             .order_by(DataVersionRow.data_version_id).limit(limit))
    return list(session.scalars(query))


def set_tag(session: Session, upsert: Any, name: str, tag: str, data_version_id: str) -> DataTag:
    if tag.isdigit():
        raise Conflict(f"data tag '{name}@{tag}': a tag of digits is a version's number, "
                       "given by a snapshot and never moved")
    if session.scalar(select(DataVersionRow.data_version_id)  # not its file list
                      .where(DataVersionRow.data_version_id == data_version_id)) is None:
        raise NotFound(f"data version {data_version_id!r} not found")
    fields = {"data_version_id": data_version_id, "created_at": utcnow()}
    session.execute(upsert(DataTagRow).values(name=name, tag=tag, **fields)
                    .on_conflict_do_update(index_elements=["name", "tag"], set_=fields))
    return get_tag(session, name, tag)


def numbered_tag(session: Session, upsert: Any, name: str, data_version_id: str
                 ) -> DataTag | None:
    """The version's number tag under `name`, given now (the highest number plus one) if it
    has none; None when another writer took that number first (the caller tries again)."""
    if session.scalar(select(DataVersionRow.data_version_id)
                      .where(DataVersionRow.data_version_id == data_version_id)) is None:
        raise NotFound(f"data version {data_version_id!r} not found")
    numbers = {row.tag: row.data_version_id for row in session.scalars(
        select(DataTagRow).where(DataTagRow.name == name)) if row.tag.isdigit()}
    for tag, version_id in numbers.items():
        if version_id == data_version_id:
            return get_tag(session, name, tag)
    tag = str(max(map(int, numbers), default=0) + 1)
    inserted = session.scalar(upsert(DataTagRow).values(
        name=name, tag=tag, data_version_id=data_version_id, created_at=utcnow())
        .on_conflict_do_nothing().returning(DataTagRow.tag))
    return None if inserted is None else get_tag(session, name, tag)


def get_tag(session: Session, name: str, tag: str) -> DataTag:
    row = session.get(DataTagRow, (name, tag))
    if row is None:
        raise NotFound(f"data tag '{name}@{tag}' not found")
    return _tag(row)


def list_tags(session: Session, data_version_id: str | None) -> list[DataTag]:
    query = select(DataTagRow).order_by(DataTagRow.name, DataTagRow.tag)
    if data_version_id is not None:
        query = query.where(DataTagRow.data_version_id == data_version_id)
    return [_tag(row) for row in session.scalars(query)]


def put_profile(session: Session, upsert: Any, key: str, kind: str, rows: int,
                profile: bytes) -> None:
    fields = {"kind": kind, "rows": rows, "profile": profile.decode(), "created_at": utcnow()}
    session.execute(upsert(DataProfileRow).values(profile_key=key, **fields)
                    .on_conflict_do_update(index_elements=["profile_key"], set_=fields))


def get_profiles(session: Session, keys: Sequence[str]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for start in range(0, len(keys), 500):
        query = select(DataProfileRow.profile_key, DataProfileRow.profile).where(
            DataProfileRow.profile_key.in_(list(keys[start:start + 500])))
        found.update((key, text.encode()) for key, text in session.execute(query))
    return found


def _tag(row: DataTagRow) -> DataTag:
    return DataTag(row.name, row.tag, row.data_version_id, as_utc(row.created_at))


class SqlDataVersionStore(SqlBase):
    """The `DataVersionStore` methods of `SqlStore`: versions, tags, profiles."""

    def put_data_version(self, version: DataVersion) -> DataVersion:
        """Store `version` unless its id is already stored; return the stored record."""
        with self._write() as session:
            stored = session.get(DataVersionRow, version.data_version_id)
            if stored is None:
                created_at = version.created_at or utcnow()
                inserted = session.scalar(self._insert(DataVersionRow).values(
                    data_version_id=version.data_version_id, source=version.source,
                    files=[dict(f) for f in version.files], num_rows=version.num_rows,
                    created_at=created_at).on_conflict_do_nothing()
                    .returning(DataVersionRow.data_version_id))
                if inserted is not None:  # not another writer's meanwhile
                    return dataclasses.replace(version, created_at=created_at)
                stored = get_row(session, DataVersionRow, version.data_version_id, "data version")
            return to_data_version(stored)

    def get_data_version(self, data_version_id: str) -> DataVersion:
        with self._read() as session:
            row = get_row(session, DataVersionRow, data_version_id, "data version")
            return to_data_version(row)

    def list_data_versions(
        self, limit: int = DEFAULT_LIMIT, cursor: str | None = None
    ) -> Page[DataVersion]:
        """Data versions, newest first."""
        with self._read() as session:
            rows, next_cursor = fetch_page(session, Listing("list_data_versions"),
                                           versions(),
                                           NEWEST_FIRST, limit, cursor)
            return Page(tuple(to_data_version(row[0]) for row in rows), next_cursor)

    def data_version_ids(self, prefix: str, limit: int = 2) -> list[str]:
        with self._read() as session:
            return ids_starting(session, prefix, limit)

    def set_data_tag(self, name: str, tag: str, data_version_id: str) -> DataTag:
        with self._write() as session:
            return set_tag(session, self._insert, name, tag, data_version_id)

    def number_data_version(self, name: str, data_version_id: str) -> DataTag:
        while True:  # a number another writer took meanwhile: the next one
            with self._write() as session:
                tag = numbered_tag(session, self._insert, name, data_version_id)
            if tag is not None:
                return tag

    def put_data_profile(self, key: str, kind: str, rows: int, profile: bytes) -> None:
        with self._write() as session:
            put_profile(session, self._insert, key, kind, rows, profile)

    def get_data_profiles(self, keys: Sequence[str]) -> dict[str, bytes]:
        with self._read() as session:
            return get_profiles(session, keys)

    def get_data_tag(self, name: str, tag: str) -> DataTag:
        with self._read() as session:
            return get_tag(session, name, tag)

    def list_data_tags(self, data_version_id: str | None = None) -> list[DataTag]:
        with self._read() as session:
            return list_tags(session, data_version_id)
