"""A run's stored model, loaded back: the same scores as the model the pipeline evaluated, and
errors that name the run and the artifact."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from home import home_artifacts

from trainforge.errors import ArtifactError
from trainforge.evaluate import predict_scores
from trainforge.pipeline import run_pipeline
from trainforge.train import Callback, load_stored_model


class KeepModel(Callback):
    def on_fit_end(self, trainer) -> None:
        self.model = trainer.model


@pytest.fixture
def kept() -> KeepModel:
    return KeepModel()


@pytest.fixture
def fraud_result(fraud_project, kept):
    return run_pipeline(fraud_project / "pipeline.yaml", ["training.epochs=1"], callbacks=[kept])


def test_the_stored_model_scores_raw_records_as_the_trained_model_did(fraud_result, kept,
                                                                       fraud_project):
    trained = kept.model
    stored = load_stored_model(home_artifacts(), fraud_result.run.run_id)
    frame = pd.concat(pd.read_parquet(path) for path in sorted(
        (fraud_project / "data").glob("*.parquet"))).head(500)
    matrix = stored.transform(frame)
    assert stored.task == "binary" and stored.feature_names
    np.testing.assert_array_equal(stored.predict_scores(frame),
                                  predict_scores(trained, matrix, "binary"))


def test_a_missing_artifact_is_named_with_its_run(fraud_result):
    artifacts = home_artifacts()
    run_id = fraud_result.run.run_id
    artifacts.objects.delete(f"{run_id}/model/weights.safetensors")
    with pytest.raises(ArtifactError, match=rf"run {run_id}: cannot read artifact "
                                            r"model/weights.safetensors"):
        load_stored_model(artifacts, run_id)


def test_a_corrupt_model_description_is_named(fraud_result):
    artifacts = home_artifacts()
    run_id = fraud_result.run.run_id
    artifacts.put_bytes(run_id, "model/model.json", b'{"model": {}}')
    with pytest.raises(ArtifactError, match=rf"run {run_id}: model/model.json is not a model"):
        load_stored_model(artifacts, run_id)
