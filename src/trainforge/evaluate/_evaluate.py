"""The evaluate stage: a trained model's metrics on a held-out split, at a decision threshold
(binary) fixed by the spec or chosen on the validation split, and per slice of the raw rows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from torch import nn

from trainforge.config import EvaluationSpec
from trainforge.errors import DataError
from trainforge.evaluate._metrics import (
    binary_metrics,
    confusion_matrix,
    multiclass_metrics,
    regression_metrics,
)
from trainforge.evaluate._scores import predict_scores
from trainforge.evaluate._slices import slice_metrics
from trainforge.evaluate._threshold import ThresholdChoice, choose_threshold

Arrays = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class EvalReport:
    """A model's metrics on one split: `metrics` by name (slice gaps as
    `slice_gap_<metric>`), the binary decision threshold and how it was set (None for other
    tasks), metrics per slice (`SliceReport.slices` / `column_gaps`) and the confusion matrix
    (classification)."""

    split: str
    metrics: dict[str, float]
    rows: int
    threshold: ThresholdChoice | None = None
    slices: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    slice_gaps: dict[str, dict[str, float]] = field(default_factory=dict)
    confusion_matrix: list[list[int]] | None = None

    def prefixed(self) -> dict[str, float]:
        """Metrics named as the run records them: `test_roc_auc`, ..."""
        return {f"{self.split}_{key}": value for key, value in self.metrics.items()}

    def to_dict(self) -> dict[str, Any]:
        """The report as `evaluation/report.json` holds it (NaN metrics as null)."""
        data: dict[str, Any] = {"split": self.split, "rows": self.rows}
        if self.threshold is not None:
            data |= {"threshold": self.threshold.value, "threshold_by": self.threshold.by,
                     "threshold_target": self.threshold.target,
                     "threshold_target_met": self.threshold.target_met}
        return data | {
            "metrics": {k: None if np.isnan(v) else v for k, v in self.metrics.items()},
            "slices": self.slices, "slice_gaps": self.slice_gaps,
            "confusion_matrix": self.confusion_matrix,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalReport:
        """The report `to_dict` wrote."""
        threshold = None
        if data.get("threshold") is not None:
            threshold = ThresholdChoice(data["threshold"], data["threshold_by"],
                                        data.get("threshold_target"),
                                        data.get("threshold_target_met"))
        metrics = {k: float("nan") if v is None else v for k, v in data["metrics"].items()}
        return cls(data["split"], metrics, data["rows"], threshold, data.get("slices", {}),
                   data.get("slice_gaps", {}), data.get("confusion_matrix"))


def evaluate_model(
    model: nn.Module,
    features: np.ndarray,
    targets: np.ndarray,
    task: str,
    spec: EvaluationSpec,
    split: str = "test",
    *,
    validation: Arrays | None = None,
    frame: pd.DataFrame | None = None,
) -> EvalReport:
    """Score `model` on (features, targets) with the metrics of its task: at the threshold
    `pick_threshold` sets from the `validation` (features, targets), and per slice of `frame`
    (the raw rows of `features`, needed when `spec.slices` names columns)."""
    threshold = None
    if task == "binary":
        val_scores = val_targets = None
        if spec.threshold == "auto" and validation is not None:
            val_scores, val_targets = predict_scores(model, validation[0], task), validation[1]
        threshold = pick_threshold(spec, val_scores, val_targets)
    scores = predict_scores(model, features, task)
    return score_report(scores, targets, task, spec, split, threshold=threshold, frame=frame)


def pick_threshold(
    spec: EvaluationSpec, val_scores: np.ndarray | None, val_targets: np.ndarray | None
) -> ThresholdChoice:
    """The spec's fixed threshold, or with `threshold: auto` the one `choose_threshold` picks
    on the validation scores (needed then)."""
    if spec.threshold != "auto":
        return ThresholdChoice(spec.threshold, "fixed")
    if val_scores is None or val_targets is None:
        raise DataError("evaluation.threshold: auto chooses on validation rows; none were given "
                        "(evaluate_model(..., validation=(features, targets)))")
    return choose_threshold(val_targets, val_scores, spec.choose_by, spec.threshold_target)


def score_report(
    scores: np.ndarray, targets: np.ndarray, task: str, spec: EvaluationSpec, split: str,
    *, threshold: ThresholdChoice | None = None, frame: pd.DataFrame | None = None,
) -> EvalReport:
    """The metrics of `task` for scores (from `outputs_to_scores`) against the targets; binary
    at `threshold` (default: the spec's fixed one, 0.5 with auto); per slice of `frame` when
    given and `spec.slices` names columns."""
    if task == "binary" and threshold is None:
        threshold = ThresholdChoice(spec.fixed_threshold, "fixed")
    cut = threshold.value if threshold is not None else 0.5

    def metrics_of(y: np.ndarray, s: np.ndarray) -> dict[str, float]:
        if task == "binary":
            return binary_metrics(y, s, cut)
        return multiclass_metrics(y, s) if task == "multiclass" else regression_metrics(y, s)

    metrics = metrics_of(targets, scores)
    slices, slice_gaps = {}, {}
    if frame is not None and spec.slices:
        report = slice_metrics(frame, spec.slices, targets, scores, metrics_of,
                               buckets=spec.slice_buckets, min_rows=spec.slice_min_rows)
        slices, slice_gaps = report.slices, report.column_gaps
        metrics |= {f"slice_gap_{name}": gap for name, gap in report.gaps.items()}
    matrix = None if task == "regression" else confusion_matrix(targets, scores, task, cut)
    return EvalReport(split=split, metrics=metrics, rows=len(targets), threshold=threshold,
                      slices=slices, slice_gaps=slice_gaps, confusion_matrix=matrix)
