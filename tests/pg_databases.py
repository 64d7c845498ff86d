"""The tests' PostgreSQL databases, on the server at `TRAINFORGE_TEST_PG_URL` (a libpq URL
whose database is a maintenance database, default postgresql://postgres@127.0.0.1:5432/postgres).

An unreachable server skips the tests that need it, or fails them when
`TRAINFORGE_REQUIRE_POSTGRES=1` (as CI sets it). `fresh_database` makes an empty database a
test drops afterwards; a `ReusedDatabase` is migrated once for a test process and emptied after
each test: migrating a fresh one takes most of a short test's time (about 0.5 s), emptying
this one about 0.03 s.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import pytest

from trainforge.storage import open_store

if TYPE_CHECKING:
    import psycopg

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def admin_url() -> str:
    return os.environ.get("TRAINFORGE_TEST_PG_URL", DEFAULT_PG_URL)


def _url(database: str, scheme: str | None = None) -> str:
    """The admin URL's server with `database`, under `scheme` (default: the admin URL's)."""
    parts = urlsplit(admin_url())
    return urlunsplit((scheme or parts.scheme, parts.netloc, f"/{database}", parts.query, ""))


def sqlalchemy_url(database: str) -> str:
    return _url(database, "postgresql+psycopg")


def admin_connection() -> psycopg.Connection:
    """An autocommit connection to the maintenance database, or skip/fail saying why."""
    try:
        import psycopg

        return psycopg.connect(admin_url(), autocommit=True, connect_timeout=5)
    except Exception as exc:  # any failure (driver, network, auth) means no usable server
        reason = f"PostgreSQL not reachable at {admin_url()}: {exc}; set TRAINFORGE_TEST_PG_URL"
        if os.environ.get("TRAINFORGE_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


def _drop(name: str) -> None:
    with admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def fresh_database() -> Iterator[str]:
    """The SQLAlchemy URL of a new, empty database, dropped on exit."""
    name = f"tf_test_{uuid.uuid4().hex[:16]}"
    with admin_connection() as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield sqlalchemy_url(name)
    finally:
        _drop(name)


class ReusedDatabase:
    """A database with trainforge's schema that one test process reuses, test after test."""

    def __init__(self) -> None:
        self.name = f"tf_test_reused_{uuid.uuid4().hex[:16]}"
        self.url = sqlalchemy_url(self.name)
        with admin_connection() as admin:
            admin.execute(f'CREATE DATABASE "{self.name}"')
        open_store(self.url).close()
        self._tables, self._sequences = self._schema()

    def _schema(self) -> tuple[list[str], list[str]]:
        """The tables, those that others refer to last, and the sequences."""
        from sqlalchemy import MetaData, create_engine, text

        engine = create_engine(self.url)
        try:
            metadata = MetaData()
            metadata.reflect(engine)
            with engine.connect() as connection:
                sequences = connection.execute(text(
                    "SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'"))
                return ([t.name for t in reversed(metadata.sorted_tables)
                         if t.name != "alembic_version"], list(sequences.scalars()))
        finally:
            engine.dispose()

    def empty(self) -> None:
        """Every row deleted and every sequence restarted, as in a freshly migrated database;
        a connection the test left open is closed first, as dropping the database would."""
        import psycopg

        with psycopg.connect(_url(self.name), autocommit=True) as connection:
            connection.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()")
            with connection.transaction():
                for table in self._tables:
                    connection.execute(f'DELETE FROM "{table}"')
                for sequence in self._sequences:
                    connection.execute(f'ALTER SEQUENCE "{sequence}" RESTART')

    def drop(self) -> None:
        _drop(self.name)


class ReusedDatabases:
    """A test process's reused databases, by key, each made on first use; all dropped by
    `drop_all` at the end of the session."""

    def __init__(self) -> None:
        self._databases: dict[str, ReusedDatabase] = {}

    def get(self, key: str) -> ReusedDatabase:
        if key not in self._databases:
            self._databases[key] = ReusedDatabase()
        return self._databases[key]

    def drop_all(self) -> None:
        for database in self._databases.values():
            database.drop()
