"""Registered pipelines: a spec stored, resolved, under an id; a submission's `config` (the
body of `POST /api/v1/pipelines/runs`) mapped onto it through its `submit:` section, every
key it refuses named before anything is queued."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from trainforge.entities import Pipeline
from trainforge.errors import Conflict, SpecError
from trainforge.pipeline import register_pipeline, resolve_submission
from trainforge.storage import Store, open_store

# The seed's body, as it prints it.
SEED_CONFIG = {"data_source": "s3://data/fraud/2024/", "model_type": "xgboost",
               "hyperparams": {"lr": 0.01, "depth": 8},
               "resources": {"gpus": 4, "memory": "64Gi"}}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return open_store(f"sqlite:///{tmp_path / 'trainforge.db'}")


@pytest.fixture
def registered(store: Store, fraud_project: Path) -> Pipeline:
    return register_pipeline(store, fraud_project / "pipeline.yaml", "fraud_model_v2",
                             user="ana")


def _refusal(pipeline: Pipeline, config: object) -> list[str]:
    with pytest.raises(SpecError) as raised:
        resolve_submission(pipeline, config)  # type: ignore[arg-type]
    return raised.value.problems


def test_registering_stores_the_resolved_spec_its_steps_and_who_registered_it(
    registered: Pipeline, store: Store, fraud_project: Path,
) -> None:
    stored = store.get_pipeline("fraud_model_v2")
    assert stored == registered and stored.created_by == "ana" and stored.name == "fraud"
    assert stored.spec is not None
    assert stored.spec["data"]["source"] == str(fraud_project / "data/transactions-*.parquet")
    assert stored.spec["submit"]["hyperparams"]["lr"] == "training.optimizer.lr"
    assert [s["name"] for s in stored.dag_config["steps"]][:2] == ["ingest", "validate"]


def test_the_specs_credentials_are_not_stored(store: Store, fraud_project: Path) -> None:
    spec = fraud_project / "pipeline.yaml"
    document = yaml.safe_load(spec.read_text())
    document["data"]["storage_options"] = {"key": "AKIAEXAMPLE", "secret": "planted-s3cr3t"}
    spec.write_text(yaml.safe_dump(document))

    registered = register_pipeline(store, spec, "fraud_model_v2", user="ana")

    assert registered.spec is not None and "planted-s3cr3t" not in json.dumps(registered.spec)
    assert registered.spec["data"]["storage_options"] == {}  # left out, as from every dump
    assert "planted-s3cr3t" not in json.dumps(store.get_pipeline("fraud_model_v2").spec)


def test_a_submission_sets_the_paths_its_pipeline_maps(registered: Pipeline,
                                                        fraud_project: Path) -> None:
    elsewhere = str(fraud_project / "data" / "transactions-2024-01-0*.parquet")
    submission = resolve_submission(registered, {
        "data_source": elsewhere, "model_type": "mlp",
        "hyperparams": {"lr": 0.01, "epochs": 2}, "resources": {"gpus": 4, "memory": "64Gi"}})

    assert submission.values == {"data.source": elsewhere, "model.type": "mlp",
                                 "training.optimizer.lr": 0.01, "training.epochs": 2}
    assert (submission.spec.data.source, submission.spec.training.optimizer.lr,
            submission.spec.training.epochs) == (elsewhere, 0.01, 2)
    assert submission.spec.training.batch_size == 512  # what the config leaves is registered
    assert (submission.resources.gpus, submission.resources.memory) == (4, "64Gi")
    assert submission.overrides[2:] == ["training.optimizer.lr=0.01", "training.epochs=2"]
    assert resolve_submission(registered, {}).values == {}


def test_the_seeds_body_is_refused_naming_the_model_and_the_unmapped_hyperparameter(
    registered: Pipeline,
) -> None:
    problems = _refusal(registered, SEED_CONFIG)
    assert problems == [
        "config.hyperparams.depth: pipeline 'fraud_model_v2' maps no hyperparameter of this "
        "name; it maps: batch_size, epochs, lr"]
    without_depth = {**SEED_CONFIG, "hyperparams": {"lr": 0.01}}
    # its data_source is s3://data/fraud/2024/: refused too where no credentials reach it
    assert ("pipeline 'fraud_model_v2': model.type 'xgboost': expected one of cnn, mlp, "
            "transformer or 'package.module:function' (set by config.model_type)") in _refusal(
        registered, without_depth)


@pytest.mark.parametrize(("config", "named"), [
    ({"data_sources": "x"}, "config: data_sources: unknown key; did you mean 'data_source'?"),
    ({"resources": {"gpu": 1}}, "config: resources.gpu: unknown key; did you mean 'gpus'?"),
    ({"resources": {"gpus": -1}}, "config: resources.gpus: expected an integer >= 0, got -1"),
    ({"resources": {"memory": "lots"}},
     "config: resources.memory: expected an amount such as 64Gi, 512Mi or 2G, got 'lots'"),
    ({"hyperparams": {"lr": -0.1}},
     "config.hyperparams.lr (sets training.optimizer.lr): expected a number > 0, got -0.1"),
    ({"hyperparams": {"epochs": "two"}},
     "config.hyperparams.epochs (sets training.epochs): expected an integer"),
    ({"model_type": ""}, "config: model_type: expected a text"),
    ([1, 2], "config: expected a mapping (a JSON object) of data_source, model_type, "
             "hyperparams and resources, got a list"),
])
def test_a_bad_config_is_refused_naming_the_key(registered: Pipeline, config: object,
                                                named: str) -> None:
    problems = _refusal(registered, config)
    assert any(p.startswith(named) for p in problems), problems


def test_a_data_source_whose_columns_do_not_fit_the_spec_is_refused(
    registered: Pipeline, tmp_path: Path,
) -> None:
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    problems = _refusal(registered, {"data_source": str(other)})
    assert problems[0] == (f"pipeline 'fraud_model_v2': data.target: 'is_fraud' is not a "
                           f"column of data file {other}; its columns are: a, b")


def test_a_spec_that_maps_no_hyperparameter_takes_none(store: Store,
                                                       fraud_project: Path) -> None:
    spec = fraud_project / "pipeline.yaml"
    document = yaml.safe_load(spec.read_text())
    del document["submit"]
    spec.write_text(yaml.safe_dump(document))
    plain = register_pipeline(store, spec, "fraud_plain", user="ana")

    assert _refusal(plain, {"hyperparams": {"lr": 0.01}}) == [
        "config.hyperparams.lr: pipeline 'fraud_plain' maps no hyperparameter of this name; "
        "it maps: none (its spec has no submit.hyperparams)"]
    assert resolve_submission(plain, {"model_type": "mlp"}).values == {"model.type": "mlp"}


def test_a_pipeline_only_its_runs_recorded_takes_no_submission(store: Store) -> None:
    recorded = store.upsert_pipeline(Pipeline("fraud", "fraud", {}))
    assert _refusal(recorded, {}) == [
        "pipeline 'fraud' was recorded by its runs, not registered: register it with "
        "`trainforge pipelines register SPEC --id fraud` before submitting runs of it"]


def test_registering_another_spec_under_a_taken_id_is_refused_unless_replaced(
    registered: Pipeline, store: Store, fraud_project: Path,
) -> None:
    spec = fraud_project / "pipeline.yaml"
    again = register_pipeline(store, spec, "fraud_model_v2", user="bo")
    assert again == registered  # the same spec: nothing changes
    changed = yaml.safe_load(spec.read_text())
    changed["training"]["epochs"] = 9
    spec.write_text(yaml.safe_dump(changed))
    with pytest.raises(Conflict, match="'fraud_model_v2' is registered with another spec"):
        register_pipeline(store, spec, "fraud_model_v2", user="bo")
    replaced = register_pipeline(store, spec, "fraud_model_v2", user="bo", replace=True)
    assert replaced.spec is not None and replaced.spec["training"]["epochs"] == 9


@pytest.mark.parametrize("pipeline_id", ["", "has space", "../up", "x" * 65, "-lead"])
def test_an_id_that_is_no_plain_name_is_refused(store: Store, fraud_project: Path,
                                               pipeline_id: str) -> None:
    with pytest.raises(SpecError, match=f"--id {pipeline_id!r}: expected 1 to 64 letters"):
        register_pipeline(store, fraud_project / "pipeline.yaml", pipeline_id, user="ana")
    assert store.list_pipelines().items == ()


def test_a_mapping_onto_a_path_the_spec_lacks_is_refused_at_registration(
    store: Store, fraud_project: Path,
) -> None:
    spec = fraud_project / "pipeline.yaml"
    document = yaml.safe_load(spec.read_text())
    document["submit"] = {"hyperparams": {"lr": "training.optimiser.lr",
                                          "patience": "training.early_stopping.patience"}}
    spec.write_text(yaml.safe_dump(document))
    with pytest.raises(SpecError) as raised:
        register_pipeline(store, spec, "fraud_model_v2", user="ana")
    text = str(raised.value)
    assert "submit.hyperparams.lr: 'training.optimiser.lr' is no field of this spec" in text
    assert ("submit.hyperparams.patience: 'training.early_stopping.patience' is no field of "
            "this spec") in text
    assert store.list_pipelines().items == ()
