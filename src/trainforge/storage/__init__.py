"""Storage: the SQL tracking database (SQLite or PostgreSQL) and the artifact stores.

Only this package imports SQLAlchemy. `open_store()` opens the database named by `TRAINFORGE_DB`
(default: a SQLite file under `trainforge_home()`), migrating it to the newest schema first.
"""

from trainforge.storage.db import default_db_url, trainforge_home
from trainforge.storage.sql_store import SqlStore, open_store

__all__ = ["SqlStore", "default_db_url", "open_store", "trainforge_home"]
