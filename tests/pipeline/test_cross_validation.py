"""`evaluation.cross_validation: k` in a whole pipeline run, and the folds it deals."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from home import home_artifacts, home_store

from trainforge.config import load_spec
from trainforge.evaluate import METRICS_BY_TASK
from trainforge.pipeline import build_training_dag, run_pipeline
from trainforge.pipeline._cross_validation import fold_of_rows


@pytest.mark.slow
def test_a_run_with_three_folds_records_mean_spread_and_each_fold(fraud_project, caplog):
    caplog.set_level(logging.INFO, "trainforge")
    overrides = ["training.epochs=1", "evaluation.cross_validation=3",
                 "evaluation.threshold=auto"]
    result = run_pipeline(fraud_project / "pipeline.yaml", overrides)
    store, artifacts = home_store(), home_artifacts()
    run = store.get_run(result.run.run_id)

    folds = json.loads(artifacts.get_bytes(run.run_id, "evaluation/cross_validation.json"))
    assert folds["k"] == 3 and [f["fold"] for f in folds["folds"]] == [0, 1, 2]
    test = json.loads(artifacts.get_bytes(run.run_id, "evaluation/report.json"))
    trained_on = 24_000 - test["rows"]
    assert sum(f["rows"] for f in folds["folds"]) == trained_on
    assert all(f["train_rows"] + f["rows"] == trained_on for f in folds["folds"])
    for metric in METRICS_BY_TASK["binary"]:
        values = [f["metrics"][metric] for f in folds["folds"]]
        assert run.metrics[f"cv_{metric}_mean"] == pytest.approx(np.mean(values))
        assert run.metrics[f"cv_{metric}_std"] == pytest.approx(np.std(values, ddof=1))
    assert 0.5 < run.metrics["cv_roc_auc_mean"] <= 1 and run.metrics["cv_roc_auc_std"] > 0

    # the folds trained quietly, apart from the run's series
    assert len(store.get_metric_history(run.run_id, "val_loss").items) == 1
    epochs = [r for r in caplog.records if r.getMessage().startswith("epoch 1/1 done in")]
    assert len(epochs) == 1  # the main training's only

    # threshold auto: chosen on validation, recorded, used by the test metrics
    assert test["threshold_by"] == "f1" and test["threshold"] == run.metrics["threshold"]
    assert run.metrics["test_f1"] == pytest.approx(test["metrics"]["f1"])
    version = store.get_model_version("fraud_detector", "1")
    assert version.metrics["test_slice_gap_roc_auc"] == run.metrics["test_slice_gap_roc_auc"]


def test_the_fold_step_runs_after_training_only_when_asked(fraud_project):
    spec = load_spec(fraud_project / "pipeline.yaml")
    names = [step.name for step in build_training_dag(spec, None).order()]
    assert "cross_validate" not in names
    spec = load_spec(fraud_project / "pipeline.yaml", ["evaluation.cross_validation=2"])
    names = [step.name for step in build_training_dag(spec, None).order()]
    assert names.index("features") < names.index("train") < names.index("cross_validate")


def test_folds_are_seeded_balanced_and_stratified():
    labels = np.array([1] * 10 + [0] * 90)
    folds = fold_of_rows(labels, 100, 3, seed=4)
    assert np.array_equal(folds, fold_of_rows(labels, 100, 3, seed=4))
    assert not np.array_equal(folds, fold_of_rows(labels, 100, 3, seed=5))
    sizes = np.bincount(folds)
    positives = np.bincount(folds[labels == 1])
    assert sizes.max() - sizes.min() <= 1 and positives.max() - positives.min() <= 1
    plain = np.bincount(fold_of_rows(None, 10, 4, seed=0))
    assert plain.tolist() == [3, 3, 2, 2]
