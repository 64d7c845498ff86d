"""Optuna's storage tests on trainforge's storage (README.md says what was taken and adapted):
each test's databases, the `postgres` mark, and the selection of the tests of our storage.

- each storage a supplier opens gets a database of its own with trainforge's schema (migrating
  it takes longer than most of these tests): a copy of a file migrated once per session, under
  the test's tmp_path, or one of the test process's reused PostgreSQL databases, emptied after
  the test (tests/pg_databases.py; skipped or failed as it says when the server is down);
- a test parametrised with the mode "postgres" is marked `postgres`;
- tests written for another storage only (Optuna's RDB, in-memory, file or Redis journal)
  are deselected, each for the reason in `OTHER_STORAGES`; their code stays as Optuna wrote it;
- a test where trainforge's storage departs from Optuna's on purpose is expected to fail
  (strictly: it is reported if it passes), for the reason in `DIVERGENCES`, and a test in
  test_trainforge_storage.py pins what trainforge does instead.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import trainforge_suppliers
from pg_databases import ReusedDatabases

from trainforge.storage.sql_tuning_journal import SqlJournalBackend

HERE = Path(__file__).parent

RDB = "asserts RDBStorage (hard-coded mode 'sqlite') and sets its attributes"
FILE = "Optuna's JournalFileBackend, hard-coded"
REDIS = "Optuna's JournalRedisBackend snapshots (mode 'journal_redis')"
OTHER_STORAGES = {
    "test_storages.py": {
        "test_get_storage": "optuna.storages.get_storage: InMemoryStorage and _CachedStorage",
        "test_get_trials_included_trial_ids": RDB,
        "test_get_trials_trial_id_greater_than": RDB,
    },
    "test_heartbeat.py": {
        "test_fail_stale_trials": RDB,
        "test_fail_stale_trials_with_race_condition": RDB,
        "test_get_stale_trial_ids": RDB,
    },
    "test_journal.py": {
        "test_retry_an_incomplete_trailing_log": FILE,
        "test_does_not_cache_an_incomplete_log_before_requested_number": FILE,
        "test_pop_waiting_trial_multiprocess_safe": FILE,
        "test_ignore_discard_trial_operation": FILE,
        "test_invalid_grace_period": "the grace period of Optuna's journal file locks",
        "test_save_snapshot_per_each_trial": REDIS,
        "test_save_snapshot_per_each_study": REDIS,
        "test_check_replay_result_restored_from_snapshot": REDIS,
        "test_snapshot_given": REDIS,
        "test_if_future_warning_occurs": "deprecated names of Optuna's file and Redis storages",
        "test_future_warning_of_deprecated_file_lock_obj_paths": "deprecated file lock names",
        "test_raise_error_for_deprecated_class_import_from_journal": "Optuna's module names",
    },
}

DIVERGENCES = {
    "test_heartbeat.py": {
        "test_heartbeat_experimental_warnings": (
            "RDBStorage warns that its `heartbeat_interval` argument is experimental; "
            "trainforge's storage always beats (its workers rely on it) and warns nothing: "
            "test_heartbeats_are_no_experiment_in_trainforge"),
    },
}


def _listed(item: pytest.Item, tests: dict[str, dict[str, str]]) -> str | None:
    if item.path.parent != HERE:
        return None
    return tests.get(item.path.name, {}).get(getattr(item, "originalname", item.name))


def _other_storage(item: pytest.Item) -> bool:
    return _listed(item, OTHER_STORAGES) is not None


@pytest.hookimpl(tryfirst=True)  # marks in place before `-m` selects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselected = [item for item in items if _other_storage(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not _other_storage(item)]
    for item in items:
        divergence = _listed(item, DIVERGENCES)
        if divergence is not None:
            item.add_marker(pytest.mark.xfail(reason=divergence, strict=True))
        callspec = getattr(item, "callspec", None)
        if item.path.parent == HERE and callspec and "postgres" in callspec.params.values():
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file with trainforge's schema, to be copied."""
    path = tmp_path_factory.mktemp("optuna_storages") / "migrated.db"
    SqlJournalBackend(f"sqlite:///{path}").close()
    return path


def _copy_sqlite(request: pytest.FixtureRequest, number: int) -> str:
    template: Path = request.getfixturevalue("migrated_sqlite")
    tmp_path: Path = request.getfixturevalue("tmp_path")
    path = tmp_path / f"optuna_storage_{number}.db"
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"


def _copy_postgres(request: pytest.FixtureRequest, number: int) -> str:
    databases: ReusedDatabases = request.getfixturevalue("reused_pg_databases")
    database = databases.get(f"optuna-storage-{number}")
    request.addfinalizer(database.empty)
    return database.url


COPIES: dict[str, Callable[[pytest.FixtureRequest, int], str]] = {
    "sqlite": _copy_sqlite, "postgres": _copy_postgres}


@pytest.fixture(autouse=True)
def _test_databases(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each storage the suppliers open in this test gets an empty database of its mode."""
    numbers = itertools.count()
    monkeypatch.setattr(trainforge_suppliers, "database_url",
                        lambda mode: COPIES[mode](request, next(numbers)))
