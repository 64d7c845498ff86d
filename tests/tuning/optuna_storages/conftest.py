"""Optuna's storage tests on trainforge's storage (README.md says what was taken and adapted):
each test's databases, the `postgres` mark, and the selection of the tests of our storage.

- each storage a supplier opens gets a database of its own, a copy of one migrated once per
  session (migrating trainforge's schema takes longer than most of these tests): a file under
  the test's tmp_path, or a PostgreSQL database made from a template and dropped after the
  test. PostgreSQL is found and skipped (or failed) as tests/conftest.py's `pg_url` says;
- a test parametrised with the mode "postgres" is marked `postgres`;
- tests written for another storage only (Optuna's RDB, in-memory, file or Redis journal)
  are deselected, each for the reason in `OTHER_STORAGES`; their code stays as Optuna wrote it;
- a test where trainforge's storage departs from Optuna's on purpose is expected to fail
  (strictly: it is reported if it passes), for the reason in `DIVERGENCES`, and a test in
  test_trainforge_storage.py pins what trainforge does instead.
"""

from __future__ import annotations

import itertools
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import pytest
import trainforge_suppliers

from trainforge.storage.sql_tuning_journal import SqlJournalBackend

if TYPE_CHECKING:
    import psycopg

HERE = Path(__file__).parent
DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/postgres"  # as tests/conftest.py

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


def _postgres_admin_url() -> str:
    return os.environ.get("TRAINFORGE_TEST_PG_URL", DEFAULT_PG_URL)


def _sqlalchemy_url(database: str) -> str:
    parts = urlsplit(_postgres_admin_url())
    return urlunsplit(("postgresql+psycopg", parts.netloc, f"/{database}", parts.query, ""))


def _postgres_admin() -> psycopg.Connection:
    """An autocommit connection to the maintenance database, or skip/fail saying why."""
    try:
        import psycopg

        return psycopg.connect(_postgres_admin_url(), autocommit=True, connect_timeout=5)
    except Exception as exc:  # any failure (driver, network, auth) means no usable server
        reason = (f"PostgreSQL not reachable at {_postgres_admin_url()}: {exc}; "
                  "set TRAINFORGE_TEST_PG_URL")
        if os.environ.get("TRAINFORGE_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def migrated_postgres() -> Iterator[str]:
    """The name of a PostgreSQL database with trainforge's schema, the template of the tests'
    databases; dropped after the session."""
    name = f"tf_test_template_{uuid.uuid4().hex[:16]}"
    with _postgres_admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            SqlJournalBackend(_sqlalchemy_url(name)).close()
            yield name
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _copy_sqlite(request: pytest.FixtureRequest, number: int) -> str:
    template: Path = request.getfixturevalue("migrated_sqlite")
    tmp_path: Path = request.getfixturevalue("tmp_path")
    path = tmp_path / f"optuna_storage_{number}.db"
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"


def _copy_postgres(request: pytest.FixtureRequest, number: int) -> str:
    template: str = request.getfixturevalue("migrated_postgres")
    name = f"tf_test_{uuid.uuid4().hex[:16]}"
    with _postgres_admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')

    def drop() -> None:
        with _postgres_admin() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    request.addfinalizer(drop)
    return _sqlalchemy_url(name)


COPIES: dict[str, Callable[[pytest.FixtureRequest, int], str]] = {
    "sqlite": _copy_sqlite, "postgres": _copy_postgres}


@pytest.fixture(autouse=True)
def _test_databases(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each storage the suppliers open in this test gets a fresh database of its mode."""
    numbers = itertools.count()
    monkeypatch.setattr(trainforge_suppliers, "database_url",
                        lambda mode: COPIES[mode](request, next(numbers)))
