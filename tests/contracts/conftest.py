"""The contract suite's fixtures: a store opened with `open_store(url)` on every backend
(SQLite, PostgreSQL, and `trainforge server` through `RestStore`), handed to each test as the
protocol the test checks.

The REST backend is the root conftest's `rest_server` (one per test process) serving a fresh
SQLite store for each test: its users and tokens stay in a store of their own, so each test's
store starts as empty as the other backends'.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from live_server import RestServer

from trainforge.entities import Pipeline
from trainforge.storage import (
    CheckpointStore,
    DataVersionStore,
    ExperimentStore,
    MetricStore,
    RegistryStore,
    RunStore,
    Store,
    open_store,
)

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres), "rest"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each backend in turn: "sqlite", "postgres", then "rest" (a SQLite store behind the
    server)."""
    return str(request.param)


@pytest.fixture
def store(backend: str, request: pytest.FixtureRequest) -> Iterator[Store]:
    """On "rest", a `RestStore` of the live server, whose session holds a fresh SQLite store
    for this test; else the root conftest's store of the backend."""
    if backend != "rest":
        yield request.getfixturevalue("sql_store")
        return
    server: RestServer = request.getfixturevalue("rest_server")
    behind = open_store(request.getfixturevalue("sqlite_url"))
    server.serve(store=behind)
    opened = open_store(server.url)
    try:
        yield opened
    finally:
        opened.close()
        behind.close()


@pytest.fixture
def experiments(store: Store) -> ExperimentStore:
    return store


@pytest.fixture
def runs(store: Store) -> RunStore:
    return store


@pytest.fixture
def metrics(store: Store) -> MetricStore:
    return store


@pytest.fixture
def checkpoints(store: Store) -> CheckpointStore:
    return store


@pytest.fixture
def data_versions(store: Store) -> DataVersionStore:
    return store


@pytest.fixture
def registry(store: Store) -> RegistryStore:
    return store


@pytest.fixture
def experiment_id(store: Store) -> str:
    return store.get_or_create_experiment("exp").experiment_id


@pytest.fixture
def run_id(store: Store, experiment_id: str) -> str:
    return store.create_run(experiment_id, {}, {}, "file:///a").run_id


@pytest.fixture
def pipeline_runs(store: Store) -> Store:
    """A store with pipelines `p` and `q`: pipeline runs need their pipeline."""
    for name in ("p", "q"):
        store.upsert_pipeline(Pipeline(name, name, {}))
    return store
