"""What every command works on: the settings, read from the environment once per CLI call (by
the root callback, `begin`), and the store of their database."""

from __future__ import annotations

from trainforge.config import Settings
from trainforge.storage import Store
from trainforge.tracking import default_store

_CURRENT: list[Settings] = []  # the settings of this CLI call; the CLI is the process's entry


def begin() -> None:
    """Read the settings for this call of the CLI."""
    _CURRENT[:] = [Settings.from_env()]


def settings() -> Settings:
    assert _CURRENT, "the root callback reads the settings first"
    return _CURRENT[0]


def store() -> Store:
    return default_store(settings())
