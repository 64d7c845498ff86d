"""The contract suite's fixtures: a store opened with `open_store(db_url)` on every backend
(SQLite, PostgreSQL), handed to each test as the protocol the test checks."""

from __future__ import annotations

import pytest

from trainforge.entities import Pipeline
from trainforge.storage import (
    CheckpointStore,
    DataVersionStore,
    ExperimentStore,
    MetricStore,
    RegistryStore,
    RunStore,
    Store,
)


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
