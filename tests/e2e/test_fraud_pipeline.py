"""The fraud example end to end on a small slice, and each bad input it must reject cleanly."""

import io
import json

import pandas as pd
import pytest
from home import home_artifacts, home_store

from trainforge.config import ModelSpec
from trainforge.entities import ModelStage, RunStatus
from trainforge.errors import RunFailed, SpecError
from trainforge.features import FeaturePipeline
from trainforge.models import build_model
from trainforge.pipeline import run_pipeline
from trainforge.train import load_weights

FAST = ["training.epochs=2"]


def only_run(store):
    [run] = store.list_runs().items
    return run


def test_pipeline_trains_gates_and_registers_with_full_lineage(fraud_project):
    result = run_pipeline(fraud_project / "pipeline.yaml", FAST)
    store = home_store()
    run = store.get_run(result.run.run_id)
    assert run.status is RunStatus.COMPLETED
    assert run.metrics["test_roc_auc"] > 0.8
    assert run.params["training"]["epochs"] == 2
    assert run.tags["gates"] == {"passed": True, "failures": []}
    assert run.tags["validation"]["passed"] is True
    assert {"python", "torch", "hostname"} <= set(run.environment)
    data_version = store.get_data_version(run.data_version_id)
    assert data_version.num_rows == 24_000 and len(data_version.files) == 6

    [version] = store.list_model_versions("fraud_detector").items
    assert version == result.model_version
    assert (version.version, version.stage, version.run_id) == ("1", ModelStage.STAGING, run.run_id)
    assert version.data_version_id == run.data_version_id
    assert version.metrics["test_roc_auc"] == run.metrics["test_roc_auc"]

    steps = int(run.metrics["train_steps"])  # the example logs the loss at every step
    losses = store.get_metric_history(run.run_id, "train_loss").items
    assert [p.step for p in losses] == list(range(1, steps + 1))
    assert len(store.get_metric_history(run.run_id, "val_roc_auc").items) == 2


def test_saved_artifacts_reproduce_the_test_predictions(fraud_project):
    result = run_pipeline(fraud_project / "pipeline.yaml", FAST)
    artifacts = home_artifacts()
    run_id = result.run.run_id
    names = artifacts.list_names(run_id)
    assert [n for n in names if not n.startswith("checkpoints/")] == [
        "data/profile.json",
        *(f"evaluation/plots/{name}.png" for name in (
            "calibration", "confusion_matrix", "pr", "roc", "slice_country",
            "slice_device_type")),
        "evaluation/report.json", "evaluation/test.parquet",
        "features/pipeline.json", "model/model.json", "model/weights.safetensors",
        "validation/report.json",
    ]
    steps = int(result.run.metrics["train_steps"])
    assert {n.split("/")[1] for n in names if n.startswith("checkpoints/")} == {
        f"step-{steps // 2:010d}", f"step-{steps:010d}"}  # one at each epoch end
    features = FeaturePipeline.from_json(
        artifacts.get_bytes(run_id, "features/pipeline.json").decode())
    description = json.loads(artifacts.get_bytes(run_id, "model/model.json"))
    assert description["feature_names"] == features.feature_names
    model = build_model(ModelSpec(**description["model"]), description["in_features"], 1)
    weights = fraud_project / "w.safetensors"
    weights.write_bytes(artifacts.get_bytes(run_id, "model/weights.safetensors"))
    load_weights(model, weights)
    from trainforge.evaluate import predict_scores, roc_auc

    parts = sorted((fraud_project / "data").glob("*.parquet"))
    frame = pd.concat(pd.read_parquet(p) for p in parts)
    test = frame.sort_values("ts", kind="stable").tail(result.evaluation.rows)
    scores = predict_scores(model, features.transform(test), "binary")
    golden = pd.read_parquet(io.BytesIO(artifacts.get_bytes(run_id, "evaluation/test.parquet")))
    pd.testing.assert_frame_equal(golden, test.reset_index(drop=True))
    assert roc_auc(test["is_fraud"].to_numpy(), scores) == pytest.approx(
        result.evaluation.metrics["roc_auc"], abs=1e-9)


def test_failed_gate_completes_the_run_but_registers_nothing(fraud_project):
    result = run_pipeline(fraud_project / "pipeline.yaml",
                          [*FAST, "evaluation.gates.0.min=0.9999"])
    assert result.model_version is None
    run = home_store().get_run(result.run.run_id)
    assert run.status is RunStatus.COMPLETED
    assert run.tags["gates"]["passed"] is False
    assert run.tags["gates"]["failures"][0].startswith("test_roc_auc >= 0.9999: got ")
    assert home_store().list_model_versions().items == ()


def expect_failed_run(fraud_project, overrides=(), match=""):
    with pytest.raises(RunFailed) as info:
        run_pipeline(fraud_project / "pipeline.yaml", [*FAST, *overrides])
    store = home_store()
    run = store.get_run(info.value.run_id)
    assert run.status is RunStatus.FAILED
    assert match in run.error
    assert store.list_model_versions().items == ()
    return run


def test_missing_data_file_fails_the_run_naming_the_source(fraud_project):
    run = expect_failed_run(fraud_project, ["data.source=nothing/*.parquet"], "DataNotFound")
    assert "nothing/*.parquet" in run.error


def test_empty_data_fails_the_run(fraud_project):
    for path in (fraud_project / "data").glob("*.parquet"):
        pd.read_parquet(path).head(0).to_parquet(path)
    expect_failed_run(fraud_project, match="no rows")


def test_a_feature_column_missing_from_the_data_is_a_spec_error_before_any_run(fraud_project):
    paths = sorted((fraud_project / "data").glob("*.parquet"))
    for path in paths:
        pd.read_parquet(path).drop(columns=["amount"]).to_parquet(path)
    with pytest.raises(SpecError, match=r"features.transforms.1.columns: 'amount' is not a "
                                        rf"column of data file {paths[0]}"):
        run_pipeline(fraud_project / "pipeline.yaml", FAST)
    assert home_store().list_runs().items == ()


def test_missing_contract_column_fails_validation_naming_the_data_and_column(fraud_project):
    for path in (fraud_project / "data").glob("*.parquet"):
        pd.read_parquet(path).drop(columns=["transaction_id"]).to_parquet(path)
    run = expect_failed_run(fraud_project, ["features.exclude=[]"], "DataValidationError")
    assert f"{fraud_project / 'data'}/transactions-*.parquet: rows break the schema" in run.error
    assert "transaction_id: present" in run.error


def test_rows_breaking_the_contract_fail_with_counts_and_row_locations(fraud_project):
    first = sorted((fraud_project / "data").glob("*.parquet"))[1]
    frame = pd.read_parquet(first)
    frame.loc[[3, 7, 11], "amount"] = -5.0
    frame.to_parquet(first)
    run = expect_failed_run(fraud_project, match="DataValidationError")
    assert "amount" in run.error and "3" in run.error
    assert f"{first.name} row 4, {first.name} row 8, {first.name} row 12" in run.error
    report = json.loads(home_artifacts().get_bytes(run.run_id, "validation/report.json"))
    [violation] = report["violations"]
    assert (violation["column"], violation["rule"], violation["count"]) == ("amount", "min", 3)


def test_contract_on_fail_warn_lets_the_run_finish(fraud_project):
    first = sorted((fraud_project / "data").glob("*.parquet"))[0]
    frame = pd.read_parquet(first)
    frame.loc[[0], "hour"] = 30
    frame.to_parquet(first)
    with pytest.warns(UserWarning, match="hour"):
        result = run_pipeline(fraud_project / "pipeline.yaml", [*FAST, "data.on_fail=warn"])
    assert result.run.tags["validation"] == {"passed": False, "violations": 1,
                                             "quarantined": 0}


@pytest.mark.parametrize("text,expected", [
    ("name: fraud\ndata: [unclosed\n", "malformed YAML"),
    (None, "training.epocs: unknown key; did you mean 'epochs'?"),
    (None, "training.optimizer.lr: expected a number > 0, got the text 'fast'"),
])
def test_spec_errors_create_no_run(fraud_project, text, expected):
    spec = fraud_project / "pipeline.yaml"
    original = spec.read_text()
    if text is not None:
        spec.write_text(text)
    elif "epocs" in expected:
        spec.write_text(original.replace("  epochs: 4", "  epocs: 4"))
    else:
        spec.write_text(original.replace("lr: 0.002", "lr: fast"))
    with pytest.raises(SpecError, match=expected):
        run_pipeline(spec)
    assert home_store().list_runs().items == ()


def test_gate_on_an_unknown_metric_is_a_spec_error(fraud_project):
    with pytest.raises(SpecError,
                       match=r"evaluation.gates.0.metric: .* did you mean 'test_roc_auc'"):
        run_pipeline(fraud_project / "pipeline.yaml", ["evaluation.gates.0.metric=test_rocauc"])


def test_same_spec_and_data_reproduce_the_same_run_bit_for_bit(fraud_project):
    first = run_pipeline(fraud_project / "pipeline.yaml", ["training.epochs=1"])
    second = run_pipeline(fraud_project / "pipeline.yaml", ["training.epochs=1"])
    store = home_store()
    losses = [[p.value.hex() for p in store.get_metric_history(r.run.run_id, "train_loss").items]
              for r in (first, second)]
    assert losses[0] == losses[1]
    assert first.evaluation.metrics == second.evaluation.metrics
    assert first.run.data_version_id == second.run.data_version_id
    artifacts = home_artifacts()
    assert (artifacts.get_bytes(first.run.run_id, "model/weights.safetensors")
            == artifacts.get_bytes(second.run.run_id, "model/weights.safetensors"))
