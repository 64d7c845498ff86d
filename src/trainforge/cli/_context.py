"""What every command works on: the settings, read from the environment once per CLI call (by
the root callback, `begin`), the store of their database, and the runs named on the command
line.

Commands that write (`run`, `runs gc`, `checkpoints gc`) take `store()`, which creates the
database when there is none. Every other command takes `existing_store()`: reading or
replaying into a database that does not exist is a mistake of where the command runs, so it
exits 1 naming the missing file or URL and the variables that point at one, and creates
nothing.

A RUN_ID argument is a whole run id or the start of one, such as the 8 characters tables
show (`RunStore.find_run`); one that matches no run or several exits 1 saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from trainforge.cli import _render
from trainforge.config import Settings
from trainforge.entities import Run
from trainforge.errors import Ambiguous, DatabaseNotFound, NotFound
from trainforge.storage import RunStore, Store
from trainforge.tracking import default_store

if TYPE_CHECKING:
    from trainforge.session import Session

_CURRENT: list[Settings] = []  # the settings of this CLI call; the CLI is the process's entry
RunId = Annotated[str, typer.Argument(
    metavar="RUN_ID", help="A run id, or its first characters when no other run shares them.")]
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


def session(create: bool = True) -> Session:
    """The session of this CLI call: its settings, their store (created on first use, or
    with `create=False` `existing_store()`) and artifact store."""
    from trainforge.session import Session

    return Session.open(settings(), None if create else existing_store())


def find_run(store: RunStore, id_or_prefix: str) -> Run:
    """The run `id_or_prefix` names; none or several exit 1 with the store's message."""
    try:
        return store.find_run(id_or_prefix)
    except (NotFound, Ambiguous) as exc:
        _render.fail(str(exc), 1)
