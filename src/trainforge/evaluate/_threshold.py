"""The decision threshold of a binary task, chosen on validation scores.

Rules (a score >= the threshold predicts the positive class; candidates are the distinct
validation scores, from torchmetrics' precision-recall curve):
- `f1`: the candidate with the highest F1; ties go to the highest threshold (fewer rows flagged).
- `recall`: the threshold with the best precision among those whose recall is >= the target
  (torchmetrics' `binary_precision_at_fixed_recall`).
- `precision`: the threshold with the best recall among those whose precision is >= the target
  (`binary_recall_at_fixed_precision`). When no threshold reaches the target precision, the
  F1 choice is taken and `target_met` is False.
- Validation labels of one class only cannot place a threshold: `DataError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torchmetrics.functional.classification as tmc

from trainforge.errors import DataError


@dataclass(frozen=True)
class ThresholdChoice:
    """A decision threshold and how it was set: `by` is "fixed" (the spec's number), "f1",
    "precision" or "recall"; `target` the precision / recall asked for and `target_met`
    whether the validation split reached it (None for fixed and f1)."""

    value: float
    by: str
    target: float | None = None
    target_met: bool | None = None


def choose_threshold(
    y_true: np.ndarray, scores: np.ndarray, by: str, target: float | None = None
) -> ThresholdChoice:
    """The threshold of the validation labels and positive-class scores by the module's
    rules."""
    labels = torch.from_numpy(np.asarray(y_true).astype(np.int64))
    preds = torch.from_numpy(np.asarray(scores, dtype=np.float64))
    if not bool(labels.any()) or bool(labels.all()):
        raise DataError(
            f"evaluation.threshold: auto needs both classes in the validation split; it holds "
            f"{len(labels)} rows of class {int(labels[0]) if len(labels) else 'none'} only")
    if by == "f1":
        return ThresholdChoice(_best_f1(preds, labels), "f1")
    assert target is not None, "threshold_by precision / recall comes with a target"
    if by == "recall":
        _, value = tmc.binary_precision_at_fixed_recall(preds, labels, min_recall=target)
        return ThresholdChoice(float(value), "recall", target, True)
    _, value = tmc.binary_recall_at_fixed_precision(preds, labels, min_precision=target)
    if math.isnan(float(value)):
        return ThresholdChoice(_best_f1(preds, labels), "precision", target, False)
    return ThresholdChoice(float(value), "precision", target, True)


def _best_f1(preds: torch.Tensor, labels: torch.Tensor) -> float:
    precision, recall, thresholds = tmc.binary_precision_recall_curve(preds, labels)
    precision, recall = precision[:-1].double(), recall[:-1].double()  # the last has no threshold
    total = precision + recall
    f1 = torch.where(total > 0, 2 * precision * recall / total.clamp_min(1e-300), 0.0)
    best = torch.nonzero(f1 == f1.max()).flatten()[-1]
    return float(thresholds[best])
