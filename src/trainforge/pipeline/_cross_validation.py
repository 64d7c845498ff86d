"""k-fold cross-validation of a spec over its training rows (`evaluation.cross_validation: k`).

Rules:
- The rows are the train and validation splits together; the test split is never used.
- Folds: a permutation seeded by `data.split.seed` dealt round-robin, within each class for
  binary and multiclass tasks (stratified), so fold sizes differ by at most one row.
- Each fold fits the feature pipeline and the target encoding on its own training part (no
  leakage from the held-out fold), builds the model with `training.seed`, and trains with the
  spec's training settings except: no early stopping (there is no validation split inside a
  fold, so every fold trains `training.epochs`), a single process, no progress output and no
  checkpoints. Its metrics go to no run series; the held-out fold is scored at the spec's fixed
  threshold (0.5 with `threshold: auto`).
- The summary is `cv_<metric>_mean` and `cv_<metric>_std` (sample standard deviation, ddof=1)
  over the folds where the metric is defined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from trainforge.config import PipelineSpec
from trainforge.errors import DataError
from trainforge.evaluate import predict_scores, score_report
from trainforge.features import FeaturePipeline, select_features
from trainforge.models import build_model, output_size
from trainforge.pipeline._dataset import encode_targets
from trainforge.split import Splits
from trainforge.train import Trainer


@dataclass(frozen=True)
class CrossValidation:
    """Per fold: `{"fold", "train_rows", "rows", "metrics"}`; and the mean and spread."""

    k: int
    folds: list[dict[str, Any]]
    mean: dict[str, float]
    std: dict[str, float]

    def summary(self) -> dict[str, float]:
        """The run summary's `cv_<metric>_mean` and `cv_<metric>_std`."""
        return {**{f"cv_{name}_mean": value for name, value in self.mean.items()},
                **{f"cv_{name}_std": value for name, value in self.std.items()}}

    def to_dict(self) -> dict[str, Any]:
        """As `evaluation/cross_validation.json` holds it (NaN as null)."""
        def clean(metrics: dict[str, float]) -> dict[str, float | None]:
            return {k: None if math.isnan(v) else v for k, v in metrics.items()}

        folds = [{**fold, "metrics": clean(fold["metrics"])} for fold in self.folds]
        return {"k": self.k, "folds": folds, "mean": clean(self.mean), "std": clean(self.std)}


def fold_of_rows(labels: np.ndarray | None, rows: int, k: int, seed: int) -> np.ndarray:
    """The fold (0..k-1) of each row by the module's rules (`labels`: stratify by them)."""
    rng = np.random.default_rng(seed)
    groups = [np.arange(rows)] if labels is None else [
        np.flatnonzero(labels == value) for value in pd.unique(labels)]
    folds = np.empty(rows, dtype=np.int64)
    dealt = 0
    for group in groups:
        order = rng.permutation(group)
        folds[order] = (np.arange(len(order)) + dealt) % k
        dealt += len(order)
    return folds


def cross_validate(spec: PipelineSpec, splits: Splits) -> CrossValidation:
    """Train and score `evaluation.cross_validation` folds of the train and validation rows."""
    k = spec.evaluation.cross_validation
    assert k is not None, "called only when the spec asks for cross-validation"
    frame = pd.concat([splits.train, splits.val], ignore_index=True)
    if len(frame) < k:
        raise DataError(f"evaluation.cross_validation: {k} folds need at least {k} training "
                        f"rows; the train and validation splits hold {len(frame)}")
    task = spec.model.task
    labels = None if task == "regression" else frame[spec.data.target].to_numpy()
    folds = fold_of_rows(labels, len(frame), k, spec.data.split.seed)
    results = [_fold(spec, frame, folds == fold, fold) for fold in range(k)]
    names = list(results[0]["metrics"])
    mean, std = {}, {}
    for name in names:
        values = np.array([r["metrics"][name] for r in results], dtype=np.float64)
        values = values[~np.isnan(values)]
        mean[name] = float(values.mean()) if len(values) else math.nan
        std[name] = float(values.std(ddof=1)) if len(values) >= 2 else math.nan
    return CrossValidation(k, results, mean, std)


def _fold(spec: PipelineSpec, frame: pd.DataFrame, held: np.ndarray, fold: int) -> dict[str, Any]:
    task = spec.model.task
    train_part = frame[~held].reset_index(drop=True)
    held_part = frame[held].reset_index(drop=True)
    selection = select_features(spec.features, train_part, spec.data.reserved_columns)
    pipeline = FeaturePipeline.from_spec(selection.spec).fit(train_part)
    classes, (y_train, y_held) = encode_targets([train_part, held_part], spec.data, task)
    x_train, x_held = pipeline.transform(train_part), pipeline.transform(held_part)
    with torch.random.fork_rng():  # the seed fixes the initial weights, nothing global
        torch.manual_seed(spec.training.seed)
        model = build_model(spec.model, x_train.shape[1], output_size(task, len(classes)))
    training = spec.training
    config = training.model_copy(update={
        "early_stopping": None, "strategy": "single", "progress": "off",
        "checkpoint": training.checkpoint.model_copy(update={"location": None}),
        "profiler": training.profiler.model_copy(update={"enabled": False})})
    result = Trainer(model, (x_train, y_train), None, config, task, None, spec.evaluation).fit()
    scores = predict_scores(result.model, x_held, task)
    report = score_report(scores, y_held, task, spec.evaluation, "cv")
    return {"fold": fold, "train_rows": len(train_part), "rows": len(held_part),
            "metrics": report.metrics}
