"""What every command works on: the settings, read from the environment once per CLI call (by
the root callback, `begin`), and the store of their database.

Commands that write (`run`, `runs gc`, `checkpoints gc`) take `store()`, which creates the
database when there is none. Every other command takes `existing_store()`: reading or
replaying into a database that does not exist is a mistake of where the command runs, so it
exits 1 naming the missing file or URL and the variables that point at one, and creates
nothing.
"""

from __future__ import annotations

from trainforge.cli import _render
from trainforge.config import Settings
from trainforge.errors import DatabaseNotFound
from trainforge.storage import Store
from trainforge.tracking import default_store

_CURRENT: list[Settings] = []  # the settings of this CLI call; the CLI is the process's entry
NO_DATABASE_HINT = ("point at one with TRAINFORGE_HOME=<folder holding trainforge.db> or "
                    "TRAINFORGE_DB=<database URL>; `trainforge run` creates one")


def begin() -> None:
    """Read the settings for this call of the CLI."""
    _CURRENT[:] = [Settings.from_env()]


def settings() -> Settings:
    assert _CURRENT, "the root callback reads the settings first"
    return _CURRENT[0]


def store() -> Store:
    """The store of the settings' database, created (and migrated) when missing."""
    return default_store(settings())


def existing_store() -> Store:
    """The store of the settings' database, which must exist (else exit 1, nothing created)."""
    try:
        return default_store(settings(), create=False)
    except DatabaseNotFound as exc:
        _render.fail(f"{exc}\n{NO_DATABASE_HINT}", 1)
