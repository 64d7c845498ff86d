"""A trained model as its run stored it, loaded to be scored again: the registry's re-scoring
gate, export and serving all start here.

A training run stores `features/pipeline.json` (the fitted feature pipeline), `model/model.json`
(the model spec, input/output sizes, feature names, classes) and `model/weights.safetensors`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from torch import nn

from trainforge.errors import ArtifactError
from trainforge.storage.artifacts import ArtifactStore

FEATURES_ARTIFACT = "features/pipeline.json"
MODEL_ARTIFACT = "model/model.json"
WEIGHTS_ARTIFACT = "model/weights.safetensors"


@dataclass(frozen=True)
class StoredModel:
    """The feature pipeline and the module (in eval mode, on the CPU) of one training run."""

    run_id: str
    features: Any  # FeaturePipeline
    module: nn.Module
    task: str
    classes: tuple[Any, ...]
    description: dict[str, Any]

    @property
    def feature_names(self) -> tuple[str, ...]:
        return tuple(self.description["feature_names"])

    def transform(
        self, frame: pd.DataFrame, locate: Callable[[int], str] | None = None
    ) -> np.ndarray:
        """The float32 feature matrix of raw records, exactly as training built it."""
        return self.features.transform(frame, locate)

    def predict_scores(self, frame: pd.DataFrame) -> np.ndarray:
        """Scores of raw records: probabilities (binary: of the positive class; multiclass: of
        each class) or predictions (regression)."""
        from trainforge.evaluate import predict_scores

        return predict_scores(self.module, self.transform(frame), self.task)


def load_stored_model(artifacts: ArtifactStore, run_id: str) -> StoredModel:
    """Load run `run_id`'s feature pipeline, model description and weights; `ArtifactError`
    names the run and the artifact that is missing or unreadable."""
    from trainforge.config import ModelSpec
    from trainforge.features import FeaturePipeline
    from trainforge.models import build_model
    from trainforge.train._weights import load_weights

    def read(name: str) -> bytes:
        try:
            return artifacts.get_bytes(run_id, name)
        except ArtifactError as exc:
            raise ArtifactError(f"run {run_id}: cannot read artifact {name}: {exc}") from None

    features_json, model_json = read(FEATURES_ARTIFACT), read(MODEL_ARTIFACT)
    try:
        features = FeaturePipeline.from_json(features_json.decode())
    except ArtifactError as exc:
        raise ArtifactError(f"run {run_id}: {FEATURES_ARTIFACT}: {exc}") from None
    try:
        description = json.loads(model_json)
        spec = ModelSpec.model_validate(description["model"])
        in_features = int(description["in_features"])
        out_features = int(description["out_features"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ArtifactError(f"run {run_id}: {MODEL_ARTIFACT} is not a model description: "
                            f"{exc}") from None
    module = build_model(spec, in_features, out_features)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "weights.safetensors"
        path.write_bytes(read(WEIGHTS_ARTIFACT))
        load_weights(module, path)
    module.eval()
    return StoredModel(run_id=run_id, features=features, module=module, task=spec.task,
                       classes=tuple(description.get("classes", ())), description=description)
