"""trainforge's tuning storage in place of the storages Optuna's vendored tests open: the
storage modes they are parametrised by, and the suppliers they open a storage with.

The modes are the databases: "sqlite" and "postgres" (conftest.py marks the second `postgres`).
Each supplier opens trainforge's `SqlJournalStorage` on the test's database (`database_url`,
set by conftest.py for each test) and closes its connections on exit. A supplier given none
of Optuna's heartbeat arguments opens the storage as trainforge's workers do (`open_storage`:
its interval and its retry callback); given any, it passes them under trainforge's names.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from trainforge.storage.sql_tuning_journal import SqlJournalBackend, SqlJournalStorage
from trainforge.tuning import open_storage

STORAGE_MODES = ["sqlite", "postgres"]
STORAGE_MODES_HEARTBEAT = STORAGE_MODES
LOG_STORAGE_WITH_PARAMETER: list[tuple[str, int | None]] = [(m, None) for m in STORAGE_MODES]

# Optuna's heartbeat arguments (RDBStorage's names) and trainforge's names for them.
HEARTBEAT_ARGUMENTS = {"heartbeat_interval": "heartbeat_interval_s",
                       "grace_period": "grace_period_s",
                       "heartbeat_stale_trial_callback": "failed_trial_callback"}


def database_url(mode: str) -> str:
    """The URL of the current test's database for `mode`; conftest.py replaces this for each
    test."""
    raise RuntimeError("no test database: the suppliers run inside tests of this folder")


def _url(mode: str) -> str:
    if mode not in STORAGE_MODES:
        raise ValueError(f"storage mode {mode!r} is not trainforge's: expected one of "
                         f"{STORAGE_MODES}")
    return database_url(mode)


class StorageSupplier(AbstractContextManager):
    """Optuna's `optuna.testing.storages.StorageSupplier`, opening trainforge's storage."""

    def __init__(self, storage_specifier: str, **kwargs: Any) -> None:
        unknown = set(kwargs) - set(HEARTBEAT_ARGUMENTS)
        if unknown:
            raise TypeError(f"trainforge's storage takes no {sorted(unknown)}")
        self.storage_specifier = storage_specifier
        self.extra_args = kwargs
        self.storage: SqlJournalStorage | None = None

    def __enter__(self) -> SqlJournalStorage:
        url = _url(self.storage_specifier)
        if not self.extra_args:
            self.storage = open_storage(url)
            return self.storage
        backend = SqlJournalBackend(url)
        options = {HEARTBEAT_ARGUMENTS[name]: value for name, value in self.extra_args.items()}
        try:
            self.storage = SqlJournalStorage(backend, **options)
        except BaseException:
            backend.close()
            raise
        return self.storage

    def __exit__(self, *exc: object) -> None:
        if self.storage is not None:
            self.storage.backend.close()


class JournalLogStorageSupplier(AbstractContextManager):
    """The journal backend of trainforge's storage, in place of `test_journal.py`'s supplier of
    Optuna's file and Redis backends; takes no grace period (that is a file lock's)."""

    def __init__(self, storage_type: str, grace_period: int | None) -> None:
        if grace_period is not None:
            raise TypeError("trainforge's journal backend takes no grace period")
        self.storage_type = storage_type
        self.backend: SqlJournalBackend | None = None

    def __enter__(self) -> SqlJournalBackend:
        self.backend = SqlJournalBackend(_url(self.storage_type))
        return self.backend

    def __exit__(self, *exc: object) -> None:
        if self.backend is not None:
            self.backend.close()
