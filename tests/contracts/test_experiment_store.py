"""`ExperimentStore`: experiments by name, pipelines by id."""

from __future__ import annotations

import pytest
from contract_helpers import MISSING, new_run

from trainforge.entities import Pipeline
from trainforge.errors import Conflict, NotFound
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


SPEC = {"name": "fraud", "model": {"type": "mlp"}}


def _registered(spec: dict[str, object] | None = None, **fields: object) -> Pipeline:
    values: dict[str, object] = {"pipeline_id": "fraud_model_v2", "name": "fraud",
                                 "dag_config": {"steps": [{"name": "train"}]},
                                 "spec": SPEC if spec is None else spec, "created_by": "ana"}
    return Pipeline(**{**values, **fields})  # type: ignore[arg-type]


def test_a_registered_pipeline_keeps_its_spec_and_who_registered_it(
    experiments: ExperimentStore,
) -> None:
    registered = experiments.register_pipeline(_registered())
    assert (registered.spec, registered.created_by, registered.dag_config) == (
        SPEC, "ana", {"steps": [{"name": "train"}]})
    assert registered.registered_at is not None
    assert experiments.get_pipeline("fraud_model_v2") == registered
    assert experiments.register_pipeline(_registered(created_by="bo")) == registered  # same spec


def test_another_spec_under_a_registered_id_is_a_conflict_unless_replaced(
    experiments: ExperimentStore,
) -> None:
    first = experiments.register_pipeline(_registered())
    changed = {**SPEC, "name": "fraud-deeper"}
    with pytest.raises(Conflict, match="'fraud_model_v2' is registered with another spec "
                       r"\(by ana"):
        experiments.register_pipeline(_registered(changed, created_by="bo"))
    assert experiments.get_pipeline("fraud_model_v2") == first
    replaced = experiments.register_pipeline(_registered(changed, created_by="bo"),
                                             replace=True)
    assert (replaced.spec, replaced.created_by) == (changed, "bo")
    assert experiments.get_pipeline("fraud_model_v2") == replaced


def test_a_run_recording_its_pipeline_leaves_a_registered_one_as_registered(
    experiments: ExperimentStore,
) -> None:
    registered = experiments.register_pipeline(_registered(pipeline_id="fraud"))
    kept = experiments.upsert_pipeline(Pipeline("fraud", "fraud", {"steps": []}))
    assert kept == registered == experiments.get_pipeline("fraud")


def test_a_pipeline_its_runs_recorded_can_be_registered(experiments: ExperimentStore) -> None:
    experiments.upsert_pipeline(Pipeline("fraud", "fraud", {"steps": []}))
    registered = experiments.register_pipeline(_registered(pipeline_id="fraud"))
    assert registered.spec == SPEC and registered.registered_at is not None


def test_registering_needs_a_spec_and_an_unknown_pipeline_is_not_found(
    experiments: ExperimentStore,
) -> None:
    with pytest.raises(ValueError, match="'p1': a registered pipeline needs its spec"):
        experiments.register_pipeline(Pipeline("p1", "p1", {}))
    with pytest.raises(NotFound, match=f"pipeline '{MISSING}' not found"):
        experiments.get_pipeline(MISSING)
    assert experiments.list_pipelines().items == ()


def test_pipelines_come_in_pages_by_id_all_or_registered_only(
    experiments: ExperimentStore,
) -> None:
    for pipeline_id in ("c", "a"):
        experiments.upsert_pipeline(Pipeline(pipeline_id, pipeline_id, {}))
    for pipeline_id in ("d", "b"):
        experiments.register_pipeline(_registered(pipeline_id=pipeline_id))
    first = experiments.list_pipelines(limit=3)
    rest = experiments.list_pipelines(limit=3, cursor=first.next_cursor)
    registered = experiments.list_pipelines(registered=True)
    recorded = experiments.list_pipelines(registered=False)

    assert [p.pipeline_id for p in first.items] == ["a", "b", "c"]
    assert ([p.pipeline_id for p in rest.items], rest.next_cursor) == (["d"], None)
    assert [p.pipeline_id for p in registered.items] == ["b", "d"]
    assert [p.pipeline_id for p in recorded.items] == ["a", "c"]
    with pytest.raises(ValueError, match="was made by list_pipelines with other arguments"):
        experiments.list_pipelines(registered=True, cursor=first.next_cursor)
