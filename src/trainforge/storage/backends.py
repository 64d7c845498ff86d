"""`open_store(url)`: the store backend a database URL names, chosen by its scheme.

    sqlite:///path/to/file.db                   SqlStore (a file, created when missing unless
                                                create=False)
    postgresql[+driver]://user@host:port/db      SqlStore
    http(s)://[:TOKEN@]host:port                 RestStore: `trainforge server`'s store, through
                                                its wire protocol, with an editor's API token

A URL may hold a password: it is masked in every message (`db.shown_url`).
"""

from __future__ import annotations

from typing import cast
from urllib.parse import urlsplit

from trainforge.errors import StoreError
from trainforge.storage.contracts import Store
from trainforge.storage.db import shown_url
from trainforge.storage.sql_store import SqlStore

SQL_SCHEMES = ("sqlite", "postgresql")
REST_SCHEMES = ("http", "https")


def open_store(url: str, create: bool = True) -> Store:
    """Open the store at `url` (a SQL database is migrated to the newest schema first).

    With `create=False` (what commands that only read use) the database must exist already:
    `DatabaseNotFound` naming the file or URL when it does not (a missing SQLite file, a
    database without trainforge's tables), and nothing is created. `StoreError` for a scheme
    no backend serves, naming the accepted ones. The default URL is
    the settings': `open_store(Settings.from_env().database_url.get_secret_value())`.

    Example: `open_store("sqlite:///runs.db").get_or_create_experiment("mnist")`.
    """
    scheme = _scheme(url)
    if scheme.partition("+")[0] in SQL_SCHEMES:
        return SqlStore(url, create)
    if scheme in REST_SCHEMES:
        from trainforge.storage.rest_store import RestStore

        return cast(Store, RestStore(url, create))
    raise StoreError(f"unsupported store URL {shown_url(url)!r}: expected a URL whose scheme is "
                     "sqlite (sqlite:///<file>), postgresql, with any driver "
                     "(postgresql+psycopg://<user>@<host>/<db>), http or https")


def _scheme(url: str) -> str:
    try:
        return urlsplit(url).scheme.lower()
    except ValueError:
        return ""
