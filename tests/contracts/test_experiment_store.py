"""`ExperimentStore`: experiments by name, pipelines by id."""

from __future__ import annotations

import pytest
from contract_helpers import MISSING, new_run

from trainforge.entities import Pipeline
from trainforge.errors import NotFound
from trainforge.storage import ExperimentStore, Store


def test_get_or_create_experiment_returns_the_same_experiment(
    experiments: ExperimentStore,
) -> None:
    created = experiments.get_or_create_experiment("mnist", description="digits")
    again = experiments.get_or_create_experiment("mnist", description="ignored")
    assert again == created
    assert (created.name, created.description, created.owner) == ("mnist", "digits", "")
    assert len(created.experiment_id) == 32
    assert experiments.get_experiment(created.experiment_id) == created


def test_experiment_names_are_unique_and_listed_by_name(experiments: ExperimentStore) -> None:
    for name in ["b", "a", "c", "a"]:
        experiments.get_or_create_experiment(name)
    page = experiments.list_experiments()
    assert [e.name for e in page.items] == ["a", "b", "c"]
    assert page.next_cursor is None


def test_experiments_come_in_pages_by_name(experiments: ExperimentStore) -> None:
    for name in ["e", "b", "d", "a", "c"]:
        experiments.get_or_create_experiment(name)
    first = experiments.list_experiments(limit=2)
    assert [e.name for e in first.items] == ["a", "b"]
    experiments.get_or_create_experiment("bb")  # sorts after the cursor: on a later page
    second = experiments.list_experiments(limit=2, cursor=first.next_cursor)
    assert [e.name for e in second.items] == ["bb", "c"]
    last = experiments.list_experiments(limit=2, cursor=second.next_cursor)
    assert ([e.name for e in last.items], last.next_cursor) == (["d", "e"], None)


def test_upsert_pipeline_inserts_then_replaces(experiments: ExperimentStore, store: Store) -> None:
    first = Pipeline("p1", "train", {"steps": [{"name": "ingest"}]}, schedule="0 * * * *")
    assert experiments.upsert_pipeline(first) == first
    second = Pipeline("p1", "train-v2", {"steps": []}, created_by="ana")
    assert experiments.upsert_pipeline(second) == second
    assert new_run(store, pipeline_id="p1").pipeline_id == "p1"


def test_an_unknown_experiment_raises_not_found_naming_it(experiments: ExperimentStore) -> None:
    with pytest.raises(NotFound) as raised:
        experiments.get_experiment(MISSING)
    assert str(raised.value) == f"experiment '{MISSING}' not found"
