"""Engines from database URLs, and the schema migrations applied on first use.

Rules:
- `sqlite:///path` gets WAL journaling, a 30 s busy timeout and foreign keys, and its parent
  folder is created; opened with `create=False`, a file that does not exist raises
  `DatabaseNotFound` instead, and nothing is created. SQLAlchemy, not the sqlite3 driver,
  emits BEGIN, so every transaction (DDL included) is real; a connection with the execution
  option `WRITE` set begins with `BEGIN IMMEDIATE`, taking the write lock up front instead of
  failing to upgrade a read lock.
- `postgresql+psycopg://...` is used as is.
- `migrate(engine)` brings the schema to the newest revision, `SCHEMA_REVISION`. It reads the
  revision first and does nothing when already there, without importing alembic (whose import
  alone takes longer than a whole read-only CLI command should); otherwise it takes a
  database-wide lock (`BEGIN IMMEDIATE` on SQLite, `pg_advisory_xact_lock` on PostgreSQL),
  reads again and upgrades in that one transaction, so processes opening a fresh database
  together all succeed. With `create=False`, a database holding no schema at all raises
  `DatabaseNotFound` and is left as it is (an older schema is still upgraded: the store reads
  only the newest).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url

from trainforge.config import mask_url_password
from trainforge.errors import DatabaseNotFound

if TYPE_CHECKING:
    from alembic.config import Config

# The newest revision in migrations/versions/, the schema the store reads and writes; a test
# pins it to alembic's head (`head_revision()`), so a new revision must move it.
SCHEMA_REVISION = "0014"
MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Execution option: begin this connection's transactions with the write lock held (SQLite).
WRITE = "trainforge_write"
SQLITE_BUSY_TIMEOUT_MS = 30_000
# Key of the PostgreSQL advisory lock serialising schema upgrades ("tfmigrat" in ASCII).
_PG_MIGRATION_LOCK = 0x74666D6967726174


def shown_url(url: str) -> str:
    """`url` with its password masked, for messages; a URL too malformed to parse is not shown."""
    try:
        return mask_url_password(url)
    except ValueError:
        return "<malformed URL>"


def shown_location(url: str) -> str:
    """Where the database of `url` is, for messages: a SQLite file's path, else the URL with
    its password masked."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        return str(Path(parsed.database).expanduser())
    return shown_url(url)


def make_engine(url: str, create: bool = True) -> Engine:
    """An engine for `url`, configured as the module docstring says; with `create=False`,
    `DatabaseNotFound` for a SQLite file that does not exist."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    if parsed.database and parsed.database != ":memory:":
        path = Path(parsed.database).expanduser()
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        elif not path.is_file():
            raise DatabaseNotFound(str(path), "the file does not exist")
    engine = create_engine(url)
    event.listen(engine, "connect", _configure_sqlite)
    event.listen(engine, "begin", _begin_sqlite)
    return engine


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    # The driver must not emit BEGIN itself: `_begin_sqlite` does, for every statement kind.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        _enable_wal(cursor)
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


def _enable_wal(cursor: sqlite3.Cursor) -> None:
    # Switching a fresh file to WAL fails at once with "database is locked" (without waiting on
    # busy_timeout) while another process is switching it too, so wait here instead.
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _begin_sqlite(connection: Connection) -> None:
    immediate = connection.get_execution_options().get(WRITE, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def alembic_config(connection: Connection | None = None) -> Config:
    """Alembic's configuration, built in code; `connection` is the one migrations run on."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision in `migrations/versions/`, as alembic reads it."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "migrations/versions/ holds no revision"
    return head


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at (alembic's record of it); None for an empty database."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    revision: str | None = connection.execute(
        text("SELECT version_num FROM alembic_version")).scalar()
    return revision


def migrate(engine: Engine, create: bool = True) -> None:
    """Upgrade the schema to `SCHEMA_REVISION`, safely under concurrent first use; with
    `create=False`, `DatabaseNotFound` for a database holding no schema."""
    head = SCHEMA_REVISION
    with engine.connect() as connection:
        current = current_revision(connection)
    if current == head:
        return
    if current is None and not create:
        location = shown_location(engine.url.render_as_string(hide_password=False))
        raise DatabaseNotFound(location, "it holds no trainforge tables")
    with engine.connect() as connection:
        connection.execution_options(**{WRITE: True})
        with connection.begin():
            if engine.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                                   {"key": _PG_MIGRATION_LOCK})
            if current_revision(connection) != head:
                upgrade(connection)


def upgrade(connection: Connection) -> None:
    """Run alembic's upgrade to head inside the caller's transaction on `connection`."""
    from alembic import command

    command.upgrade(alembic_config(connection), "head")
