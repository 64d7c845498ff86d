"""Registration refuses a model whose served feature encoder does not reproduce the training
features on the golden set: here the training code's standardize transform drifts from the
fitted state the encoder is compiled from."""

from __future__ import annotations

import pytest
from home import home_store

from trainforge.errors import FeatureMismatch, RunFailed
from trainforge.features import Standardize
from trainforge.pipeline import run_pipeline


@pytest.mark.slow
def test_a_tampered_feature_transform_fails_registration_naming_row_and_feature(
        fraud_project, monkeypatch):
    real = Standardize._transform
    monkeypatch.setattr(Standardize, "_transform", lambda self, frame: real(self, frame) + 1e-3)
    with pytest.raises(RunFailed) as caught:
        run_pipeline(fraud_project / "pipeline.yaml", ["training.epochs=1"])
    cause = caught.value.__cause__
    assert isinstance(cause, FeatureMismatch)
    assert "differs from the training transform at golden row 1, feature 'amount'" in str(cause)
    store = home_store()
    assert store.list_model_versions().items == ()
    assert store.get_run(caught.value.run_id).status.value == "failed"
