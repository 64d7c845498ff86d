"""Storage: the SQL tracking database (SQLite or PostgreSQL) and the artifact stores.

Only this package imports SQLAlchemy. `open_store(url)` opens the database at `url`
(`Settings.database_url`), migrating it to the newest schema first.
"""

from trainforge.storage.sql_store import SqlStore, open_store

__all__ = ["SqlStore", "open_store"]
