"""`SqlBase`: what every SQL store area shares: the engine, its sessions (every public method
is one transaction: `_read` or `_write`), the dialect's upsert, connection failures as
`StoreUnavailable`, and lookups that name what is missing.

`SqlStore` (sql_store.py) is the areas together; each area's methods live beside its
statements: `sql_metrics.SqlMetricStore`, `sql_checkpoints.SqlCheckpointStore`,
`sql_data_versions.SqlDataVersionStore`, `sql_pipeline_runs.SqlPipelineRunStore`,
`sql_registry.SqlRegistryStore`, `sql_outbox.SqlOutbox`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from trainforge.errors import NotFound, StoreError, StoreUnavailable
from trainforge.storage.db import WRITE, make_engine, migrate, shown_url
from trainforge.storage.tables import Base, RunRow

# Both dialects spell upserts the same way (ON CONFLICT); other backends are refused.
_BACKENDS: dict[str, Callable[[type[Base]], sqlite.Insert | postgresql.Insert]] = {
    "sqlite": sqlite.insert, "postgresql": postgresql.insert,
}
RowT = TypeVar("RowT", bound=Base)


def new_id() -> str:
    """A fresh id: uuid4 as 32 hex characters."""
    return uuid.uuid4().hex


class SqlBase:
    """The engine and sessions of a store on SQLite or PostgreSQL; safe to share between
    threads. The schema is migrated when it is opened (with `create=False`, a database that
    does not exist or holds no schema raises `DatabaseNotFound` and nothing is created)."""

    def __init__(self, url: str, create: bool = True) -> None:
        backend = _backend(url)
        self._url = url
        self._engine = make_engine(url, create)
        self._dialect = backend
        self._insert = _BACKENDS[backend]
        try:
            with self._translated():
                migrate(self._engine, create)
        except BaseException:
            self._engine.dispose()
            raise
        self._reader = sessionmaker(self._engine, expire_on_commit=False)
        writer = self._engine.execution_options(**{WRITE: True})
        self._writer = sessionmaker(writer, expire_on_commit=False)

    def __repr__(self) -> str:
        shown = make_url(self._url).render_as_string(hide_password=True)
        return f"{type(self).__name__}({shown!r})"

    def close(self) -> None:
        """Close every pooled connection; the store can still be used afterwards."""
        self._engine.dispose()

    @contextmanager
    def _read(self) -> Iterator[Session]:
        with self._translated(), self._reader() as session:
            yield session

    @contextmanager
    def _write(self) -> Iterator[Session]:
        with self._translated(), self._writer.begin() as session:
            yield session

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """Connection-level failures (refused, lost, lock wait timed out) as
        `StoreUnavailable`."""
        try:
            yield
        except (OperationalError, InterfaceError) as exc:
            raise StoreUnavailable(f"{self!r} unavailable: {exc.orig or exc}") from exc


def _backend(url: str) -> str:
    """The backend name of `url`, or `StoreError` saying which URLs are accepted."""
    expected = "expected sqlite:///<file> or postgresql+psycopg://<user>@<host>/<db>"
    try:
        backend = make_url(url).get_backend_name()
    except (ArgumentError, ValueError):
        # not chained: SQLAlchemy's message may quote the URL, password and all
        raise StoreError(f"malformed database URL {shown_url(url)!r}: {expected}") from None
    if backend not in _BACKENDS:
        shown = make_url(url).render_as_string(hide_password=True)
        raise StoreError(f"unsupported database URL {shown!r}: {expected}")
    return backend


def require_run(session: Session, run_id: str) -> None:
    """`NotFound` unless the run exists (reads the key only, not the run's JSON)."""
    if session.scalar(select(RunRow.run_id).where(RunRow.run_id == run_id)) is None:
        raise NotFound(f"run {run_id!r} not found")


def get_row(
    session: Session, row_type: type[RowT], key: str, what: str, lock: bool = False
) -> RowT:
    """The row of `row_type` with primary key `key`, or `NotFound` naming `what`."""
    row = session.get(row_type, key, with_for_update=lock)
    if row is None:
        raise NotFound(f"{what} {key!r} not found")
    return row
